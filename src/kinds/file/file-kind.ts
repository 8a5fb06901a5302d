import type { KindCode } from '../kind-parts.js';
import { fileHandler } from './file-handler.js';

/** Files need nothing but the machine's files; the footprint watches them between applies. */
export const fileKind: KindCode<'file'> = { handler: () => fileHandler, watch: { footprint: 'file' } };
