import type { HostConfig } from '../config/config.js';
import type { Resource } from '../declaration/schema.js';
import { reconcileSource, type KeptDeclaration } from '../host/kept.js';
import type { ManagerChoice } from '../services/choose.js';
import { peekState, type Store } from '../store/store.js';
import type { StoreState } from '../store/state.js';
import type { Logger } from '../system/log.js';
import type { Finding } from '../watch/finding.js';
import { watchHost } from '../watch/watchers.js';

export interface WatchingDeps {
  stateDir: string;
  root: string;
  config: () => HostConfig;
  kept: KeptDeclaration;
  serviceManager: () => Promise<ManagerChoice>;
  log: Logger;
  onFound(found: Finding[]): void;
}

/**
 * The watchers of the host between two applies: what the last applied declaration asked to run, and
 * the footprint as the store saved it (read without the lock: it is saved whole). Returns their close.
 */
export function startWatching(deps: WatchingDeps): () => void {
  // Read and watched at once, in this turn of the event loop: the footprint's first look is what the
  // apply that just ended left, before a report of it can reach anyone who might change it.
  const state = peekState(deps.stateDir);
  if (state === undefined) return () => undefined;
  const watcher = watchHost({
    declared: () => lastDeclared(deps, state),
    records: state.records,
    root: deps.root,
    serviceManager: async () => (await deps.serviceManager()).manager,
    onFound: (found) => {
      deps.log.info({ found: found.map((f) => f.message) }, 'watch: found between applies; a reconcile is asked for');
      deps.onFound(found);
    },
    onUnitsWatched: (units) => deps.log.debug({ reportSequence: state.reportSequence, units }, 'watch: the units are watched from here on'),
    log: deps.log,
  });
  deps.log.debug({ reportSequence: state.reportSequence }, 'watch: the footprint is watched from here on');
  return () => watcher.close();
}

/** The resources of what a reconcile would apply now (the kept declaration, or the carried bundle), signature checked; none if nothing opens. */
async function lastDeclared(deps: WatchingDeps, state: StoreState): Promise<Resource[]> {
  try {
    const { received } = await reconcileSource({ config: deps.config(), store: { state } as Store, kept: deps.kept });
    return received.declaration.resources;
  } catch {
    return [];
  }
}
