import type { KindCode } from '../kind-parts.js';
import { packageHandler } from './package-handler.js';

/** Packages act through the machine's package manager, with the host's command runner. */
export const packageKind: KindCode<'package'> = { handler: (parts) => packageHandler(parts.runner) };
