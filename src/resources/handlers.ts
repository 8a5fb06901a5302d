import type { HandlerTable } from './converge.js';
import { directoryHandler } from './directory.js';
import { fileHandler } from './file.js';

/**
 * The kinds that need nothing but the machine's files: the host's table (host/environment.ts) adds
 * the others, each made by its own factory; the engine's tests use these alone.
 */
export const BASE_HANDLERS: HandlerTable = { directory: directoryHandler, file: fileHandler };
