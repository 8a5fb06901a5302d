import { DEFAULTS } from '../../core/config/config.js';
import { lazyHandler } from '../../engine/converge/handler-types.js';
import type { ManagerChoice } from '../../machine/services/choose.js';
import type { Resource } from '../../core/declaration/schema.js';
import type { Watcher } from '../../engine/converge/watch-finding.js';
import type { KindCode, KindParts, KindWatchInput } from '../kind-parts.js';
import { unitProbe } from './unit-probe.js';
import { watchUnits } from './unit-watch.js';
import { SERVICE_SHAPE, type ServiceRuntime } from './runtime.js';
import type { ServiceResource } from './service-spec.js';

const noServiceManager = async (): Promise<ManagerChoice> => ({ manager: undefined, reason: 'no service manager is provided' });

/** What a unit's handler needs of the host: the service manager, the clock, the pause between a unit's two looks. */
export const serviceRuntime = (parts: KindParts): ServiceRuntime => ({
  manager: parts.serviceManager ?? noServiceManager,
  clock: parts.clock,
  pauseMs: parts.verifyPauseMs ?? DEFAULTS.verifyPauseMs,
  ...(parts.unitsLeft ? { onLeft: parts.unitsLeft } : {}),
});

/** The units the mesh asked to run. */
export const unitsToWatch = (declared: readonly Resource[]): string[] => declared.flatMap((r) => (r.type === 'service' && r.state === 'running' ? [r.unit] : []));

/**
 * The units the declaration last applied asks to run, watched through the service manager: asked for
 * only when there are some, and not at all when the watcher is closed first.
 */
export function watchServices(input: KindWatchInput): Watcher | undefined {
  const serviceManager = input.serviceManager;
  if (!serviceManager) return undefined;
  let closed = false;
  let units: Watcher | undefined;
  const watched = async () => {
    const declared = unitsToWatch(await input.declared());
    return { declared, manager: declared.length > 0 && !closed ? await serviceManager() : undefined };
  };
  watched().then(
    ({ declared, manager }) => {
      if (closed || !manager) return;
      units = watchUnits({
        units: declared,
        probe: unitProbe(manager, input.managerRoot ?? '/'),
        ...(input.unitsLeft ? { left: input.unitsLeft } : {}),
        onFound: input.onFound,
        onWatching: () => input.onUnitsWatched?.(declared),
        log: input.log,
        ...(input.unitIntervalMs ? { intervalMs: input.unitIntervalMs } : {}),
      });
    },
    (err: Error) => input.log.warn({ err: err.message }, 'watch: no service manager to watch the units with'),
  );
  return {
    close() {
      closed = true;
      units?.close();
    },
  };
}

/** The services' code (and XState with it) loads only when an apply has services to converge or remove. */
export const serviceKind: KindCode<'service'> = {
  handler: (parts) => lazyHandler<ServiceResource>(SERVICE_SHAPE, () => import('./service-handler.js').then((m) => m.serviceHandler(serviceRuntime(parts)))),
  watch: { own: watchServices },
};
