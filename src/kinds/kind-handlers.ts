import type { ResourceType } from '../core/declaration/schema.js';
import type { HandlerTable } from '../engine/converge/converge.js';
import { archiveKind } from './archive/archive-kind.js';
import { containerKind } from './container/container-kind.js';
import { directoryKind } from './directory/directory-kind.js';
import { directoryHandler } from './directory/directory-handler.js';
import { fileKind } from './file/file-kind.js';
import { fileHandler } from './file/file-handler.js';
import { serviceKind } from './service/service-kind.js';
import { groupKind } from './group/group-kind.js';
import { userKind } from './user/user-kind.js';
import { packageKind } from './package/package-kind.js';
import type { KindCode, KindParts } from './kind-parts.js';

/**
 * The registry of kinds, its second half: each kind's code, one line a kind, keyed by the types the
 * first half (kind-specs.ts) lists; a kind listed there and missing here does not compile.
 */
export const KIND_CODE: { [T in ResourceType]: KindCode<T> } = {
  directory: directoryKind,
  file: fileKind,
  archive: archiveKind,
  service: serviceKind,
  container: containerKind,
  group: groupKind,
  user: userKind,
  package: packageKind,
};

/** The handler table the engine is given: every kind's handler, each made from the parts it needs. */
export function kindHandlers(parts: KindParts): HandlerTable {
  return Object.fromEntries(Object.entries(KIND_CODE).map(([type, code]) => [type, code.handler(parts)])) as HandlerTable;
}

/** The kinds that need nothing but the machine's files: the engine's tests use these alone. */
export const BASE_HANDLERS: HandlerTable = { directory: directoryHandler, file: fileHandler };
