import type { HostConfig } from '../../core/config/config.js';
import type { Resource } from '../../core/declaration/schema.js';
import { reconcileSource, type KeptDeclaration } from '../env/kept-declaration.js';
import type { ManagerChoice } from '../../machine/services/choose.js';
import type { UnitsLeft } from '../../kinds/service/runtime.js';
import type { Store } from '../../core/store/store.js';
import type { StoreState } from '../../core/store/state.js';
import type { Logger } from '../../core/system/log.js';
import type { Finding } from '../../engine/converge/watch-finding.js';
import { watchHost } from '../watch/watchers.js';
import type { ContainerEngine } from '../../kinds/container/engine.js';

export interface WatchingDeps {
  /** The store as saved (the daemon's peek): as its last run left it, or read without the lock. */
  saved: () => Readonly<StoreState> | undefined;
  root: string;
  config: () => HostConfig;
  kept: KeptDeclaration;
  /** What the apply that just ended saw of its units at its end, if it had services. */
  unitsLeft?: UnitsLeft | undefined;
  serviceManager: () => Promise<ManagerChoice>;
  /** The container engine, reached when the host made containers. */
  containerEngine: () => Promise<ContainerEngine>;
  log: Logger;
  onFound(found: Finding[]): void;
}

/**
 * How long after an apply the footprint's first look waits: the apply's report is published meanwhile,
 * and a delivery that follows at once starts its apply without 10,000 lstats on libuv's threads beside it
 * (the watchers end when an apply starts). Nothing is missed: the folders are watched from the start.
 */
const FIRST_LOOK_AFTER_MS = 100;

/**
 * The watchers of the host between two applies: what the last applied declaration asked to run, and
 * the footprint as the store saved it: as the daemon's own last run left it, or read without the lock
 * when a command run by hand saved since (it is saved whole). Returns their close.
 */
export function startWatching(deps: WatchingDeps): () => void {
  // Watched at once, in this turn of the event loop: every change after the apply that just ended is
  // heard, even one made while the first look is being taken (see watchFootprint).
  const state = deps.saved();
  if (state === undefined) return () => undefined;
  const watcher = watchHost({
    declared: () => lastDeclared(deps, state),
    records: state.records,
    ...(deps.unitsLeft ? { unitsLeft: deps.unitsLeft } : {}),
    root: deps.root,
    serviceManager: async () => (await deps.serviceManager()).manager,
    containerEvents: async () => (await deps.containerEngine()).events,
    node: deps.config().node,
    onFound: (found) => {
      deps.log.info({ found: found.map((f) => f.message) }, 'watch: found between applies; a reconcile is asked for');
      deps.onFound(found);
    },
    onUnitsWatched: (units) => deps.log.debug({ reportSequence: state.reportSequence, units }, 'watch: the units are watched from here on'),
    log: deps.log,
    firstLookAfterMs: FIRST_LOOK_AFTER_MS,
  });
  let closed = false;
  void watcher.looked.then(() => {
    if (!closed) deps.log.debug({ reportSequence: state.reportSequence }, 'watch: the footprint is watched from here on');
  });
  return () => {
    closed = true;
    watcher.close();
  };
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
