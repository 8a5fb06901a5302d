import { existsSync } from 'node:fs';
import type { CommandRunner } from '../../core/system/runner.js';
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

/**
 * `sync -f PATH` (syncfs) of the engine's storage, when it lies on this machine: an engine reached over a
 * socket from another machine or container keeps its storage where this host cannot sync it.
 */
function syncFileSystemWith(runner: CommandRunner): (path: string) => Promise<void> {
  return async (path) => {
    if (!existsSync(path)) return;
    const r = await runner.run('sync', ['-f', path]);
    if (r.code !== 0) throw new Error(`the container engine's storage ${path} could not be synced: ${r.stderr.trim() || `sync exited ${r.code}`}`);
  };
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
          ...(parts.runner ? { syncFileSystem: syncFileSystemWith(parts.runner) } : {}),
        }),
      ),
    ),
  watch: { own: watchHostContainers },
};
