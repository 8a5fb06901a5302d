import type { UnitsLeft } from '../services/runtime.js';
import type { LifecycleActor, LifecycleEvent } from '../../machines/lifecycle.js';
import type { HostEnv } from '../apply/apply.js';
import { connectionArchiveObjects } from '../archive/objects.js';
import { engineOnce } from '../containers/connect.js';
import type { ContainerEngine } from '../containers/engine.js';
import { loadConfig, type HostConfig } from '../config/config.js';
import type { LinkSettingsWatch } from '../config/watch.js';
import type { Mode } from '../declaration/schema.js';
import { hostEnvironment, serviceManagerOnce, type HostDeps } from '../host/environment.js';
import type { HostPaths } from '../host/paths.js';
import { startDaemonMetrics, type DaemonMetrics } from '../metrics/daemon-metrics.js';
import { Outbox } from '../report/outbox.js';
import type { ManagerChoice } from '../services/choose.js';
import type { Store } from '../store/store.js';
import { heapFitter } from '../system/memory.js';
import { hostSigner } from './host-signer.js';
import { DeliveryIntake } from './intake.js';
import type { LauncherLink } from './launcher-seam.js';
import { DaemonLink } from './link.js';
import { cachedLinks } from './links-fact.js';
import { LockedStore } from './locked-store.js';
import { RememberedKept } from './remembered-kept.js';
import { tellWhenCommitted } from './worker.js';
import { heartbeatOf, statusOf } from './status.js';
import type { Mark } from '../declaration/order.js';

/** An unenrolled daemon given a bundle enrols itself with it. */
export interface GenesisOrder {
  bundlePath: string;
  mode: Mode;
}

export interface DaemonOptions extends HostDeps {
  paths: HostPaths;
  /** `mesh-host run --bundle FILE --mode M`: used only when the store says the machine is not enrolled. */
  genesis?: GenesisOrder;
  /** Started by `mesh-host launch`: the pipe it handed down, and the release on trial if this host is one. */
  launcher?: LauncherLink;
  /** Log (debug) each time the event loop was held longer than 20 ms, with the lifecycle's state. */
  watchStalls?: boolean;
}

/** What a start reads again, and what the last apply left. */
export interface DaemonNow {
  config: HostConfig;
  serviceManager: () => Promise<ManagerChoice>;
  containerEngine: () => Promise<ContainerEngine>;
  linkUp: boolean;
  /** What the last apply saw of its units at its end: the unit watcher's baseline. Cleared when a piece of work starts. */
  unitsLeft?: UnitsLeft | undefined;
}

/**
 * Everything the daemon's actors are made over, each part doing one job: the locked store (the one
 * writer's way in, and the peek), the kept declaration, the outbox, the link and its intake, metrics.
 * `now` holds what a start reads again (the configuration, the service manager); `lifecycle` is the
 * running machine, bound once it is made.
 */
export interface DaemonParts {
  options: DaemonOptions;
  now: DaemonNow;
  store: LockedStore;
  kept: RememberedKept;
  outbox: Outbox;
  link: DaemonLink;
  intake: DeliveryIntake;
  metrics: DaemonMetrics;
  /** Full collections fitted to each apply: a small heap marks early and is not made to compact (see system/memory.ts). */
  fitHeap: ReturnType<typeof heapFitter>;
  links: ReturnType<typeof cachedLinks>;
  env(store: Store): HostEnv;
  status(): ReturnType<typeof statusOf>;
  heartbeat(): ReturnType<typeof heartbeatOf>;
  lifecycle: { send(event: LifecycleEvent): void; state(): unknown; kept(): Mark | undefined };
  bind(actor: LifecycleActor): void;
  /** The watch of the link settings, told the configuration each start reads. */
  settings?: LinkSettingsWatch;
}

/** The daemon's parts over its paths and dependencies; the lifecycle is bound to them once it is made. */
export async function daemonParts(options: DaemonOptions): Promise<DaemonParts> {
  const { paths, log, clock, runner } = options;
  const config = loadConfig(paths.configPath).config;
  const now: DaemonNow = { config, serviceManager: serviceManagerOnce(runner, config), containerEngine: engineOnce(config.containerSocket), linkUp: false };
  const store = new LockedStore(paths.stateDir, log);
  const kept = new RememberedKept(paths.stateDir);
  const outbox = new Outbox(paths.stateDir, config.outbox);
  const link = new DaemonLink(log, clock, () => hostSigner(paths.stateDir, log));
  const links = cachedLinks(runner, clock);
  const archiveObjects = connectionArchiveObjects(() => link.connection, () => (now.config.servers.length === 0 ? 'no servers are configured' : 'the link is not connected'), log);
  const startedAt = clock.monotonic();
  let actor: LifecycleActor | undefined;
  const lifecycle = { send: (event: LifecycleEvent) => actor?.send(event), state: () => actor?.getSnapshot().value, kept: () => actor?.getSnapshot().context.kept };
  const status = () => statusOf(store.peek().head, now.config.node, { state: lifecycle.state(), kept: lifecycle.kept() }, clock.now().getTime());
  const metrics = await startDaemonMetrics(config, { outboxWaiting: () => outbox.pending().length, lastReport: lastReportOf(store, clock), refusals: () => store.peek().head?.refusals ?? {}, linkUp: () => now.linkUp, now: () => clock.now().getTime() }, log);
  const intake = new DeliveryIntake({
    config: () => now.config,
    log,
    remember: (received) => kept.remember(received),
    refuse: (refused) => lifecycle.send({ type: 'REFUSED', refused }),
    deliver: (delivery) => lifecycle.send({ type: 'DELIVERY', delivery }),
  });
  return {
    options, now, store, kept, outbox, link, intake, metrics, links, fitHeap: heapFitter(), lifecycle, status,
    env: (s) => hostEnvironment({ paths, config: now.config, store: s, deps: options, serviceManager: now.serviceManager, outbox, archiveObjects: () => archiveObjects, unitsLeft: (left) => void (now.unitsLeft = left), facts: async () => ({ links: await links() }) }),
    heartbeat: () => heartbeatOf(status(), clock.monotonic() - startedAt),
    bind: (made) => {
      actor = made;
      // A report whose head is renamed leaves at once, while the worker makes the rename durable and lets go of the lock.
      tellWhenCommitted(outbox, (report) => made.send({ type: 'REPORT_MADE', report }));
    },
  };
}

/** The last report made: its sequence as saved, and when the outcome that made it was (an outcome that spent no sequence does not count). */
function lastReportOf(store: LockedStore, clock: HostDeps['clock']): () => { sequence: number; at: string } | null {
  let seen: { sequence: number; at: string } | null = null;
  return () => {
    const head = store.peek().head;
    const sequence = head?.reportSequence ?? 0;
    if (sequence === 0) return null;
    if (seen?.sequence !== sequence) seen = { sequence, at: head?.lastOutcome?.at ?? clock.now().toISOString() };
    return seen;
  };
}
