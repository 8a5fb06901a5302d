import { DEFAULT_ARCHIVE_LIMITS } from '../../core/config/archive-limits.js';
import { DEFAULTS } from '../../core/config/config.js';
import { lazyHandler } from '../../engine/converge/handler-types.js';
import type { Watcher } from '../../engine/converge/watch-finding.js';
import type { KindCode, KindWatchInput } from '../kind-parts.js';
import { watchContainers } from './container-watch.js';
import type { ContainerResource } from './container-spec.js';
import { engineOnce } from './engine-connect.js';
import { CONTAINER_SHAPE } from './engine-request.js';

/** The engine's events for the containers this host made, heard only when the store records some. */
function watchHostContainers(input: KindWatchInput): Watcher | undefined {
  if (!input.containerEvents || input.node === undefined) return undefined;
  if (!Object.values(input.records).some((r) => r.type === 'container')) return undefined;
  return watchContainers({ events: input.containerEvents, label: `mesh-host.node=${input.node}`, onFound: input.onFound, log: input.log });
}

/** The containers' code loads only when an apply has containers; the engine is reached once, at the first. */
export const containerKind: KindCode<'container'> = {
  handler: (parts) =>
    lazyHandler<ContainerResource>(CONTAINER_SHAPE, () =>
      import('./container-handler.js').then((m) =>
        m.containerHandler({
          node: parts.node,
          stateDir: parts.stateDir,
          engine: engineOnce(parts.containerSocket),
          clock: parts.clock,
          pauseMs: parts.verifyPauseMs ?? DEFAULTS.verifyPauseMs,
          archiveLimits: { ...DEFAULT_ARCHIVE_LIMITS, ...parts.archiveLimits },
          objects: parts.archiveObjects ?? (() => undefined),
        }),
      ),
    ),
  watch: { own: watchHostContainers },
};
