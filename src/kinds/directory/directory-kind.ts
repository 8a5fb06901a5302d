import type { KindCode } from '../kind-parts.js';
import { directoryHandler } from './directory-handler.js';

/** Directories need nothing but the machine's files; the footprint watches them between applies. */
export const directoryKind: KindCode<'directory'> = { handler: () => directoryHandler, watch: { footprint: 'directory' } };
