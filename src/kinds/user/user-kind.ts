import type { KindCode } from '../kind-parts.js';
import { userHandler } from './user-handler.js';

/** Users act through the machine's own tools, with the host's command runner. */
export const userKind: KindCode<'user'> = { handler: (parts) => userHandler(parts.runner) };
