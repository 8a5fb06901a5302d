import type { UnitsLeft } from '../../kinds/service/runtime.js';
import type { LifecycleActor, LifecycleEvent } from '../../../machines/lifecycle.js';
import type { HostEnv } from '../../engine/apply/apply.js';
import { connectionArchiveObjects } from '../../kinds/archive/objects.js';
import { engineOnce } from '../../kinds/container/engine-connect.js';
import type { ContainerEngine } from '../../kinds/container/engine.js';
import { loadConfig, type HostConfig } from '../../core/config/config.js';
import type { LinkSettingsWatch } from '../../core/config/watch.js';
import type { Mode } from '../../core/declaration/schema.js';
import { hostEnvironment, serviceManagerOnce, type HostDeps } from '../env/host-environment.js';
import type { HostPaths } from '../env/host-paths.js';
import { startDaemonMetrics, type DaemonMetrics } from '../metrics/daemon-metrics.js';
import { Outbox } from '../../engine/report/outbox.js';
import type { ManagerChoice } from '../../machine/services/choose.js';
import type { Store } from '../../core/store/store.js';
import { heapFitter } from '../../core/system/memory.js';
import { hostSigner } from './host-signer.js';
import { DeliveryIntake } from './intake.js';
import type { LauncherLink } from './launcher-seam.js';
import { DaemonLink } from './daemon-link.js';
import { cachedLinks } from './links-fact.js';
import { LockedStore } from './locked-store.js';
import { RememberedKept } from './remembered-kept.js';
import { HeldTrust } from '../env/held-trust.js';
import { TrustFollow } from './trust-follow.js';
import { heartbeatOf, statusOf } from './daemon-status.js';
import { StateDirProbe } from './state-dir-probe.js';
import type { Mark } from '../../core/declaration/order.js';

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
  /** The trust root this host holds, and what follows the mesh's newer versions. */
  trust: HeldTrust;
  trustFollow: TrustFollow;
  metrics: DaemonMetrics;
  /** Full collections fitted to each apply: a small heap marks early and is not made to compact (see core/system/memory.ts). */
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
  const stateDirProbe = new StateDirProbe(paths.stateDir, () => link.beatNow());
  let actor: LifecycleActor | undefined;
  const lifecycle = { send: (event: LifecycleEvent) => actor?.send(event), state: () => actor?.getSnapshot().value, kept: () => actor?.getSnapshot().context.kept };
  const status = () => statusOf(store.peek().head, now.config.node, { state: lifecycle.state(), kept: lifecycle.kept(), trust: { version: trust.version(), refusal: trustFollow.refusal } }, clock.now().getTime(), clock.boot);
  const metrics = await startDaemonMetrics(config, { outboxWaiting: () => outbox.pending().length, lastReport: lastReportOf(store, clock), refusals: () => store.peek().head?.refusals ?? {}, linkUp: () => now.linkUp, now: () => clock.now().getTime() }, log);
  const trust = new HeldTrust(paths.stateDir, config.publicKey);
  const trustFollow = new TrustFollow({ trust: () => trust, log, clock, everyMs: config.rereadMs ?? 60_000 });
  const intake = new DeliveryIntake({
    config: () => now.config,
    log,
    rule: () => trust.rule(),
    catchUpTrust: () => trustFollow.catchUp('a delivery the held version does not accept'),
    lifecycle: () => actor,
  });
  return {
    options, now, store, kept, outbox, link, intake, trust, trustFollow, metrics, links, fitHeap: heapFitter(), lifecycle, status,
    env: (s) => hostEnvironment({ paths, config: now.config, store: s, deps: options, serviceManager: now.serviceManager, outbox, archiveObjects: () => archiveObjects, unitsLeft: (left) => void (now.unitsLeft = left), facts: async () => ({ links: await links() }) }),
    // Each beat starts a probe of the state directory and says the last one's answer; a changed answer beats again at once.
    heartbeat: () => (void stateDirProbe.probe(), heartbeatOf(status(), clock.monotonic() - startedAt, stateDirProbe.fault)),
    bind: (made) => {
      actor = made;
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
