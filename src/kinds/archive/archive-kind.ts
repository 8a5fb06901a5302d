import { DEFAULT_ARCHIVE_LIMITS } from '../../core/config/archive-limits.js';
import { lazyHandler, pathShape } from '../../engine/converge/handler-types.js';
import type { ArchiveResource } from './archive-spec.js';
import type { KindCode, KindParts } from '../kind-parts.js';

/** What an archive needs of the host: where it keeps archives, its bounds, the mesh's store, the clock. */
export const archiveHost = (parts: KindParts) => ({
  stateDir: parts.stateDir,
  limits: { ...DEFAULT_ARCHIVE_LIMITS, ...parts.archiveLimits },
  objects: parts.archiveObjects ?? (() => undefined),
  clock: parts.clock,
});

/** The archives' code (node-tar with it) loads only when an apply has archives. */
export const archiveKind: KindCode<'archive'> = {
  handler: (parts) => lazyHandler<ArchiveResource>(pathShape(), () => import('./archive-handler.js').then((m) => m.archiveHandler(archiveHost(parts)))),
};
