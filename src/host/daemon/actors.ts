import { fromCallback, fromPromise } from 'xstate';
import type { DeferredLock, Delivery, Ending, LifecycleEvent, lifecycleMachine, LoadedStore, Work, WorkerOutput } from '../../../machines/lifecycle.js';
import { pauseOrderAt } from '../../../machines/pause.js';
import { loadConfig } from '../../core/config/config.js';
import { readDeclarationFile } from '../../core/declaration/load.js';
import { markOf } from '../../core/declaration/order.js';
import { genesis } from '../genesis/genesis.js';
import { serviceManagerOnce } from '../env/host-environment.js';
import { engineOnce } from '../../kinds/container/engine-connect.js';
import { checkPlanRequest, previewDeclaration } from '../../engine/apply/plan-preview.js';
import { hostInventory } from '../env/host-inventory.js';
import { refused } from '../../core/system/errors.js';
import { markStep } from '../../core/system/trace.js';
import { letGo } from '../../core/system/yielder.js';
import { watchOutbox } from './outbox-watch.js';
import { watchPause } from './pause-watch.js';
import { deferredLocks, watchLocks } from './lock-watch.js';
import { lockReader } from '../../engine/inhibit/inhibit-lock.js';
import type { DaemonParts, GenesisOrder } from './parts.js';
import { startWatching } from './watching.js';
import { runWork } from './worker.js';
import { ReportSender } from './report-sender.js';

type Implementations = Parameters<typeof lifecycleMachine.provide>[0];

/**
 * The lifecycle's effects, each made over the daemon's parts: what the machine decides (keep, refuse,
 * apply next, which report leaves) it decides; these only carry it out. The worker (applyWorker) is the
 * one writer of the store and the machine; the intake only checks and tells the machine.
 */
export function daemonImplementations(parts: DaemonParts): Implementations {
  const sender = new ReportSender(parts.link, parts.outbox, parts.options.clock, parts.options.log);
  return {
    actions: {
      writeKept: (_, { delivery }) => keepDelivery(parts, delivery),
      sayAlreadyKept: (_, { delivery }) => parts.options.log.info({ revision: delivery.revision, ...markOf(delivery) }, 'link: the declaration read is the one already kept and applied; nothing to do'),
    },
    actors: {
      loadStore: loadStoreActor(parts),
      genesis: genesisActor(parts),
      link: linkActor(parts),
      reconcileTimer: reconcileTimer(parts),
      outboxWatch: fromCallback(({ sendBack }) => watchOutbox(parts.options.paths.stateDir, parts.outbox, parts.options.clock, parts.options.log, () => parts.store.busy, sendBack)),
      watchers: watchersActor(parts),
      pauseWatch: pauseWatchActor(parts),
      lockWatch: lockWatchActor(parts),
      applyWorker: applyWorker(parts),
      reportSender: fromPromise(sender.send),
      quiesce: fromPromise<void, { ending: Ending }>(async ({ input }) => {
        parts.store.quiesce();
        // The removals of reports acknowledged just now are made durable before the host ends or stands aside.
        await sender.flushNow();
        parts.options.log.info({ ending: input.ending }, 'the host ends between applies: the store is quiesced');
      }),
    },
  };
}

/** The delivery the machine kept: the bytes the intake verified, written durably before it is applied. */
function keepDelivery(parts: DaemonParts, delivery: Delivery): void {
  parts.kept.keepDelivered(delivery, parts.now.config);
  markStep('kept');
  parts.options.log.info({ revision: delivery.revision, ...markOf(delivery) }, 'link: delivery kept and enqueued');
}

/** A start: the configuration read again, then under the lock what the machine orders against. */
function loadStoreActor(parts: DaemonParts) {
  return fromPromise<LoadedStore>(async () => {
    const { paths, runner } = parts.options;
    const config = (parts.now.config = loadConfig(paths.configPath).config);
    // Genesis may have pinned a trust root (or the configuration another key) since the last start.
    parts.trust.load(config.publicKey);
    parts.now.serviceManager = serviceManagerOnce(runner, config);
    parts.now.containerEngine = engineOnce(config.containerSocket);
    parts.settings?.settle(config);
    parts.store.reopen();
    return parts.store.run('start', async (s) => {
      const { mode, lastApplied, genesisDigest, pause, lastOutcome } = s.state;
      const nowMs = parts.options.clock.now().getTime();
      const paused = pauseOrderAt(pause, nowMs, parts.options.clock.boot);
      const deferred = deferredLocks(s.state.records, nowMs);
      const kept = await parts.kept.mark(config);
      const keyValue = parts.kept.revision();
      return {
        enrolled: genesisDigest !== undefined || parts.kept.exists(),
        ...(mode ? { mode } : {}),
        ...(lastApplied ? { applied: markOf(lastApplied) } : {}),
        ...(kept ? { kept } : {}),
        ...(keyValue ? { keyValue } : {}),
        ...(paused ? { paused } : {}),
        ...(deferred.length > 0 ? { deferred } : {}),
        ...(lastOutcome?.outcome === 'failed' ? { lastFailed: { report: lastOutcome.reportSequence, ...(lastOutcome.message ? { message: lastOutcome.message } : {}) } } : {}),
      };
    });
  });
}

function genesisActor(parts: DaemonParts) {
  return fromPromise<void, { bundle: unknown }>(async ({ input }) => {
    const order = input.bundle as GenesisOrder;
    const { paths, log } = parts.options;
    try {
      const result = await genesis(paths, parts.options, { bytes: readDeclarationFile(order.bundlePath), source: order.bundlePath, mode: order.mode, dryRun: false });
      if (result.kind === 'refused') throw refused(result.reason, result.details, result.refusal, result.subjects);
      if (result.kind !== 'planned') log.info({ outcome: result.report.outcome, report: result.report.sequence }, 'enrolled with the bundle given');
    } catch (err) {
      log.error({ err: (err as Error).message, details: (err as { details?: string[] }).details }, `genesis with ${order.bundlePath} failed; the host waits for mesh-host genesis`);
      throw err;
    }
  });
}

function linkActor(parts: DaemonParts) {
  return fromCallback(({ sendBack }) => {
    const close = parts.link.open(parts.now.config, {
      onDeclaration: parts.intake.take,
      onUp: () => {
        parts.now.linkUp = true;
        const nc = parts.link.connection;
        if (nc) void parts.trustFollow.up(nc);
        sendBack({ type: 'LINK_UP' });
      },
      onDown: () => {
        parts.now.linkUp = false;
        sendBack({ type: 'LINK_DOWN' });
      },
      status: async () => parts.status(),
      // Between applies the daemon's own last run is the store as saved: its 10,000 records are not parsed again for each request.
      inventory: async () => hostInventory({ runner: parts.options.runner, root: parts.options.paths.root, config: parts.now.config, state: parts.store.peek().state(), serviceManager: async () => (await parts.now.serviceManager()).manager }),
      heartbeat: () => parts.heartbeat(),
      plan: async (request, limit) => {
        const checked = await checkPlanRequest(request, { node: parts.now.config.node, rule: parts.trust.rule() });
        if ('outcome' in checked) return checked;
        return parts.store.plan((s) => previewDeclaration(parts.env(s), checked.received, { diff: checked.diff, limit }));
      },
    });
    return () => {
      parts.trustFollow.stop();
      close();
    };
  });
}

function reconcileTimer(parts: DaemonParts) {
  return fromCallback(({ sendBack }) => {
    const { clock } = parts.options;
    const every = parts.now.config.reconcileIntervalMs;
    let cancel = clock.after(every, function tick() {
      sendBack({ type: 'RECONCILE_TICK' });
      cancel = clock.after(every, tick);
    });
    return () => cancel();
  });
}

function watchersActor(parts: DaemonParts) {
  return fromCallback(({ sendBack }) =>
    startWatching({
      saved: () => parts.store.peek().state(),
      root: parts.options.paths.root,
      config: () => parts.now.config,
      kept: parts.kept,
      unitsLeft: parts.now.unitsLeft,
      serviceManager: () => parts.now.serviceManager(),
      containerEngine: () => parts.now.containerEngine(),
      log: parts.options.log,
      onFound: (found) => {
        for (const kind of ['unit', 'drift', 'container'] as const) {
          const n = found.filter((f) => f.kind === kind).length;
          if (n > 0) parts.metrics.driftFound(kind === 'drift' ? 'path' : kind, n);
        }
        sendBack({ type: 'DRIFT_FOUND', found: found.map((f) => f.message) });
      },
    }),
  );
}

/** The pause a command run by hand saved or removed, told to the lifecycle, and to the mesh by a heartbeat at once. */
function pauseWatchActor(parts: DaemonParts) {
  return fromCallback(({ sendBack }) => {
    const { paths, clock, log } = parts.options;
    let told = false;
    return watchPause(paths.stateDir, () => parts.store.peek().head, clock, log, (order) => {
      if (order) log.info({ paused: order.pause }, 'the host is paused: it applies nothing until it is resumed');
      else if (told) log.info('the pause ended: what waits is applied now');
      sendBack(order ? { type: 'PAUSE', ...order } : { type: 'UNPAUSE' });
      if (told) parts.link.beatNow();
      told = true;
    });
  });
}

/** The locks of the steps held off, watched; the first let go told to the lifecycle. */
function lockWatchActor(parts: DaemonParts) {
  return fromCallback<LifecycleEvent, { locks: DeferredLock[] }>(({ sendBack, input }) => {
    const { paths, clock, log } = parts.options;
    log.info({ locks: input.locks }, 'lock: steps held off while their locks are held; the locks are watched');
    return watchLocks(paths.root, input.locks, lockReader(paths.root), clock, log, (released) => {
      log.info(released, 'lock: released; what it held off is applied now');
      sendBack({ type: 'LOCK_RELEASED', ...released });
    });
  });
}

/** The one writer: each piece of work the machine hands it, under the lock. */
function applyWorker(parts: DaemonParts) {
  return fromPromise<WorkerOutput, Work>(async ({ input }) => {
    const { clock, log } = parts.options;
    // Started inside the turn that kept the delivery: the loop is let go before the apply's own work.
    await letGo();
    markStep('worker');
    // What an earlier apply left stands no longer: this one may end before its second look.
    parts.now.unitsLeft = undefined;
    const started = clock.monotonic();
    let output: WorkerOutput | undefined;
    try {
      // The store held under the lock for the whole of this work, and let go however it ends.
      const held = await parts.store.hold(input.kind === 'refusals' ? 'refusal' : 'apply');
      try {
        markStep('locked');
        const s = held.store;
        // How many resources the apply goes through: what the store holds, or the kept declaration, if more.
        parts.fitHeap(Math.max(parts.kept.resourcesKept(), Object.keys(s.state.records).length));
        output = await runWork({ config: () => parts.now.config, kept: parts.kept, env: parts.env, clock }, s, input);
        if (input.kind !== 'refusals' && !output.paused) parts.metrics.applied(input.kind, s.state.lastOutcome?.outcome ?? 'converged', (clock.monotonic() - started) / 1000);
      } finally {
        held.release(output !== undefined);
      }
    } catch (err) {
      log.error({ err, work: input.kind }, 'the worker could not run');
      throw err;
    }
    markStep('unlocked');
    await parts.metrics.written();
    markStep('done');
    return output;
  });
}
