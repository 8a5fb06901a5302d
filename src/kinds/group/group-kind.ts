import type { KindCode } from '../kind-parts.js';
import { groupHandler } from './group-handler.js';

/** Groups act through the machine's own tools, with the host's command runner. */
export const groupKind: KindCode<'group'> = { handler: (parts) => groupHandler(parts.runner) };
