import { createActor, fromCallback, fromPromise, toPromise } from 'xstate';
import { lifecycleMachine, type Delivery, type Ending, type LoadedStore, type Pending, type ReportRef, type WorkerOutput } from '../../machines/lifecycle.js';
import { reportRefusal } from '../apply/apply.js';
import { loadConfig, type HostConfig } from '../config/config.js';
import { watchLinkSettings } from '../config/watch.js';
import { readDeclarationFile } from '../declaration/load.js';
import type { Mode } from '../declaration/schema.js';
import { genesis } from '../genesis/genesis.js';
import { hostEnvironment, serviceManagerOnce, type HostDeps } from '../host/environment.js';
import { hostSigner } from './host-signer.js';
import { RememberedKept } from './remembered-kept.js';
import { attachLauncher, type LauncherLink } from './launcher-seam.js';
import type { HostPaths } from '../host/paths.js';
import { hostInventory } from '../host/inventory.js';
import { connectionArchiveObjects } from '../archive/objects.js';
import { Outbox, REPORT_HEADROOM } from '../report/outbox.js';
import type { Report } from '../report/report.js';
import type { Store } from '../store/store.js';
import { markOf } from '../declaration/order.js';
import { refused, type RefusalKind } from '../system/errors.js';
import { heapFitter } from '../system/memory.js';
import { DeliveryIntake, type CarriedDelivery } from './intake.js';
import { DaemonLink } from './link.js';
import { cachedLinks } from './links-fact.js';
import { LockedStore } from './locked-store.js';
import { watchOutbox } from './outbox-watch.js';
import { heartbeatOf, statusOf } from './status.js';
import { savedStateReader } from './saved-state.js';
import { applyPending, waitingReports } from './worker.js';
import { startWatching } from './watching.js';
import { engineOnce } from '../containers/connect.js';
import { watchStalls } from './stall-watch.js';
import { letGo } from '../system/yielder.js';
import { startDaemonMetrics } from '../metrics/daemon-metrics.js';
import { peekState } from '../store/store.js';
import { checkPlanRequest, previewDeclaration } from '../apply/preview.js';

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

interface DaemonRefusal {
  kind: RefusalKind;
  message: string;
  trigger: Report['trigger'];
  declaration?: Report['declaration'];
}

/** How many resources the apply about to run goes through: what the store holds, or a delivery's own, if more. */
const resourcesAhead = (pending: Pending, store: Store): number =>
  Math.max(pending.kind === 'delivery' ? (pending.delivery as CarriedDelivery).payload.declaration.resources.length : 0, Object.keys(store.state.records).length);

/**
 * `mesh-host run`: the lifecycle machine with the real actors and effects plugged in. It only wires:
 * what to keep, what to refuse, what to apply next and which report leaves next are the machine's
 * decisions; each part here does one job (delivery intake, the kept declaration, the locked store, the
 * worker, the link, the outbox watch).
 */
export async function runDaemon(options: DaemonOptions): Promise<{ code: number; output: unknown }> {
  const { paths, log, clock, runner } = options;
  let config: HostConfig = loadConfig(paths.configPath).config;
  let serviceManager = serviceManagerOnce(runner, config);
  let containerEngine = engineOnce(config.containerSocket);
  const outbox = new Outbox(paths.stateDir, config.outbox);
  const kept = new RememberedKept(paths.stateDir);
  // Full collections fitted to each apply: a small heap compacts and marks early (see system/memory.ts).
  const fitHeap = heapFitter();
  const store = new LockedStore(paths.stateDir, log);
  const link = new DaemonLink(log, clock, () => hostSigner(paths.stateDir, log));
  const links = cachedLinks(runner, clock);
  const startedAt = clock.monotonic();
  const archiveObjects = connectionArchiveObjects(() => link.connection, () => (config.servers.length === 0 ? 'no servers are configured' : 'the link is not connected'));
  let linkUp = false;
  const savedState = savedStateReader(paths.stateDir);
  // Defined before the metrics start: their first textfile write, at start, asks for the last report.
  /** The last report made: its sequence as saved, and when the outcome that made it was (an outcome that spent no sequence does not count). */
  let lastReportSeen: { sequence: number; at: string } | null = null;
  const lastReport = () => {
    const s = savedState();
    const sequence = s?.reportSequence ?? 0;
    if (sequence === 0) return null;
    if (lastReportSeen?.sequence !== sequence) lastReportSeen = { sequence, at: s?.lastOutcome?.at ?? clock.now().toISOString() };
    return lastReportSeen;
  };
  const metrics = await startDaemonMetrics(config, {
    outboxWaiting: () => outbox.pending().length,
    lastReport: () => lastReport(),
    refusals: () => savedState()?.refusals ?? {},
    linkUp: () => linkUp,
    now: () => clock.now().getTime(),
  }, log);
  const env = (s: Store) => hostEnvironment({ paths, config, store: s, deps: options, serviceManager, outbox, archiveObjects: () => archiveObjects, facts: async () => ({ links: await links() }) });

  /** A refusal made outside the worker: reported under the lock, and every report then waiting handed to the machine. */
  async function refuse(refusal: DaemonRefusal): Promise<void> {
    const waiting = await store.run('refusal', async (s) => {
      reportRefusal(env(s), refusal);
      return waitingReports(outbox);
    });
    for (const report of waiting) actor.send({ type: 'REPORT_MADE', report });
    await metrics.written();
  }

  const intake = new DeliveryIntake({
    config: () => config,
    log,
    refuse: (r) => refuse({ ...r, trigger: 'delivery' }),
    deliver: (delivery) => actor.send({ type: 'DELIVERY', delivery }),
  });

  const machine = lifecycleMachine.provide({
    actions: {
      writeKept: (_, { delivery }) => {
        const carried = delivery as CarriedDelivery;
        kept.keep(carried.payload.bytes, carried.revision ?? 0, carried.digest);
        kept.remember(carried.payload, config);
        log.info({ revision: carried.revision, ...markOf(carried) }, 'link: delivery kept and enqueued');
      },
      reportRefusal: (_, { delivery, reason }) => {
        const message = `the delivery (revision ${delivery.revision}): ${reason}; nothing was touched`;
        refuse({ kind: 'stale', message, trigger: 'delivery', declaration: markOf(delivery) }).catch((err: Error) => log.error({ err }, 'a refusal could not be reported'));
      },
      sayAlreadyKept: (_, { delivery }: { delivery: Delivery }) => {
        log.info({ revision: delivery.revision, ...markOf(delivery) }, 'link: the declaration read is the one already kept and applied; nothing to do');
      },
    },
    actors: {
      loadStore: fromPromise<LoadedStore>(async () => {
        config = loadConfig(paths.configPath).config;
        serviceManager = serviceManagerOnce(runner, config);
        containerEngine = engineOnce(config.containerSocket);
        settingsWatch.settle(config);
        store.reopen();
        return store.run('start', async (s) => {
          const { mode, lastApplied, genesisDigest } = s.state;
          const keptMark = await kept.mark(config);
          const keyValue = kept.revision();
          return {
            enrolled: genesisDigest !== undefined || kept.exists(),
            outbox: waitingReports(outbox),
            ...(mode ? { mode } : {}),
            ...(lastApplied ? { applied: markOf(lastApplied) } : {}),
            ...(keptMark ? { kept: keptMark } : {}),
            ...(keyValue ? { keyValue } : {}),
          };
        });
      }),
      genesis: fromPromise<void, { bundle: unknown }>(async ({ input }) => {
        const order = input.bundle as GenesisOrder;
        try {
          const result = await genesis(paths, options, { bytes: readDeclarationFile(order.bundlePath), source: order.bundlePath, mode: order.mode, dryRun: false });
          if (result.kind === 'refused') throw refused(result.reason, result.details, result.refusal, result.subjects);
          if (result.kind !== 'planned') log.info({ outcome: result.report.outcome, report: result.report.sequence }, 'enrolled with the bundle given');
        } catch (err) {
          log.error({ err: (err as Error).message, details: (err as { details?: string[] }).details }, `genesis with ${order.bundlePath} failed; the host waits for mesh-host genesis`);
          throw err;
        }
      }),
      link: fromCallback(({ sendBack }) =>
        link.open(config, {
          onDeclaration: (value) => intake.take(value),
          onUp: () => {
            linkUp = true;
            sendBack({ type: 'LINK_UP' });
          },
          onDown: () => {
            linkUp = false;
            sendBack({ type: 'LINK_DOWN' });
          },
          status: async () => status(),
          // Between applies the daemon's own last run is the store as saved: its 10,000 records are not parsed again for each request.
          inventory: async () => hostInventory({ runner, config, state: store.lastSaved() ?? peekState(paths.stateDir), serviceManager: async () => (await serviceManager()).manager }),
          heartbeat: () => heartbeatOf(status(), clock.monotonic() - startedAt),
          plan: async (request, limit) => {
            const checked = await checkPlanRequest(request, config);
            if ('outcome' in checked) return checked;
            return store.plan((s) => previewDeclaration(env(s), checked.received, { diff: checked.diff, limit }));
          },
        }),
      ),
      reconcileTimer: fromCallback(({ sendBack }) => {
        const every = config.reconcileIntervalMs;
        let cancel = clock.after(every, function tick() {
          sendBack({ type: 'RECONCILE_TICK' });
          cancel = clock.after(every, tick);
        });
        return () => cancel();
      }),
      outboxWatch: fromCallback(({ sendBack }) => watchOutbox(paths.stateDir, outbox, clock, log, (report) => sendBack({ type: 'REPORT_MADE', report }))),
      watchers: fromCallback(({ sendBack }) =>
        startWatching({
          stateDir: paths.stateDir,
          lastSaved: () => store.lastSaved(),
          root: paths.root,
          config: () => config,
          kept,
          serviceManager: () => serviceManager(),
          containerEngine: () => containerEngine(),
          log,
          onFound: (found) => {
            for (const kind of ['unit', 'drift', 'container'] as const) {
              const n = found.filter((f) => f.kind === kind).length;
              if (n > 0) metrics.driftFound(kind === 'drift' ? 'path' : kind, n);
            }
            sendBack({ type: 'DRIFT_FOUND', found: found.map((f) => f.message) });
          },
        }),
      ),
      applyWorker: fromPromise<WorkerOutput, Pending>(async ({ input }) => {
        // Started inside the turn that checked and kept the delivery: the loop is let go before the apply's own work.
        await letGo();
        const started = clock.monotonic();
        const output = await store
          .run('apply', async (s) => {
            fitHeap(resourcesAhead(input, s));
            const out = await applyPending({ config: () => config, kept, outbox, env }, s, input);
            metrics.applied(input.kind, s.state.lastOutcome?.outcome ?? 'converged', (clock.monotonic() - started) / 1000);
            return out;
          })
          .catch((err: Error) => {
            log.error({ err, pending: input.kind }, 'the apply could not run');
            throw err;
          });
        await metrics.written();
        return output;
      }),
      reportSender: fromPromise<void, ReportRef>(async ({ input }) => {
        // Fitted under the server's limit (less room for the subject and headers); gone means folded into
        // a later one, or acknowledged already.
        const published = await link.publish(input.sequence, (limit) => outbox.message(input.sequence, limit - REPORT_HEADROOM));
        if (!published.sent) return void log.debug({ report: input.sequence }, 'link: report folded into a later one; nothing to send');
        await outbox.remove(input.sequence);
        log.debug({ report: input.sequence, duplicate: published.duplicate, bytes: published.bytes }, 'link: report acknowledged');
      }),
      quiesce: fromPromise<void, { ending: Ending }>(async ({ input }) => {
        store.quiesce();
        log.info({ ending: input.ending }, 'the host ends between applies: the store is quiesced');
      }),
    },
  });

  const status = () => statusOf(savedState(), config.node, actor.getSnapshot().value);

  const actor = createActor(machine, { input: options.genesis ? { bundle: options.genesis } : {} });
  const onSignal = (signal: NodeJS.Signals) => {
    log.info({ signal }, 'signal');
    const type = signal === 'SIGUSR1' ? 'STAND_ASIDE' : signal === 'SIGUSR2' ? 'RESUME' : signal === 'SIGHUP' ? 'MOVE' : 'STOP';
    actor.send({ type });
  };
  const signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGUSR1', 'SIGUSR2', 'SIGHUP'];
  for (const s of signals) process.on(s, onSignal);
  // An edit of the link settings moves the host to the bus they name, between applies.
  const settingsWatch = watchLinkSettings(paths.configPath, config, log, (next) => {
    log.info({ servers: next.servers }, 'the link settings changed: moving to the new bus between applies');
    actor.send({ type: 'MOVE' });
  });
  actor.subscribe({ error: (err) => log.error({ err }, 'lifecycle failed') });
  const detachLauncher = options.launcher && attachLauncher(actor, { ...options.launcher, stateDir: paths.stateDir, node: () => config.node, log, report: (make) => store.run('trial report', async (s) => make(env(s))) });
  const stopStallWatch = options.watchStalls ? watchStalls(log, () => actor.getSnapshot().value) : undefined;
  // Every daemon runs commands sooner or later (the links a report carries, an inventory's probes):
  // child_process and what it brings are loaded now, not at the first command, in the middle of an apply.
  void import('node:child_process');
  actor.start();
  log.info({ node: config.node, servers: config.servers }, 'mesh-host run: started');
  const output = (await toPromise(actor)) as { ending?: string; failure?: string; abandoned?: boolean };
  settingsWatch.close();
  stopStallWatch?.();
  detachLauncher?.();
  await metrics.close();
  for (const s of signals) process.off(s, onSignal);
  if (output.failure) log.fatal({ failure: output.failure }, 'the host could not start');
  if (output.abandoned) log.warn('the apply in flight outlasted the grace and was left; the host stopped instead of standing aside or moving');
  log.info(output, 'mesh-host run: ended');
  return { code: output.failure ? 4 : 0, output };
}
