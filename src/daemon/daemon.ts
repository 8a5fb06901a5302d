import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createActor, fromCallback, fromPromise, toPromise } from 'xstate';
import { lifecycleMachine, type Delivery, type Ending, type LoadedStore, type Pending, type WorkerOutput } from '../../machines/lifecycle.js';
import { applyDeclaration, reportRefusal, type HostEnv } from '../apply/apply.js';
import { HANDLERS } from '../apply/handlers.js';
import { openStore } from '../apply/open.js';
import { loadConfig, type HostConfig } from '../config/config.js';
import { watchLinkSettings } from '../config/watch.js';
import { receiveDeclaration, type Received } from '../declaration/load.js';
import { orderProblem } from '../apply/order.js';
import { takeInventory } from '../inventory/inventory.js';
import { probeLinks, type Link } from '../inventory/links.js';
import { LinkSession } from '../link/session.js';
import { firewallEnv } from '../firewall/env.js';
import { linkAuthOf } from '../link/connect.js';
import { connectionArchiveObjects } from '../archive/objects.js';
import { reportSigner } from '../link/report-trust.js';
import { ensureHostKey } from '../report/host-key.js';
import { Outbox, REPORT_HEADROOM } from '../report/outbox.js';
import { systemAccounts } from '../resources/accounts.js';
import { chooseServiceManager, type ManagerChoice } from '../services/choose.js';
import { writeDurably } from '../store/durable.js';
import { acquireLock } from '../store/lock.js';
import type { Store } from '../store/store.js';
import type { AppliedMark } from '../store/state.js';
import type { Clock } from '../system/clock.js';
import { HostError, refused } from '../system/errors.js';
import type { Logger } from '../system/log.js';
import type { CommandRunner } from '../system/runner.js';
import { reconcileSource } from '../cli/commands/reconcile.js';
import { KEPT_DECLARATION, KEPT_REVISION, type HostPaths } from '../cli/host.js';

export interface DaemonOptions {
  paths: HostPaths;
  log: Logger;
  clock: Clock;
  runner: CommandRunner;
}

/** A delivery as the machine carries it: ordered by (epoch, sequence), its checked declaration opaque. */
interface CarriedDelivery extends Delivery {
  payload: Received;
}

/**
 * `mesh-host run`: the lifecycle machine with the real actors plugged in. Every apply takes the lock
 * and reads the store afresh (a command run by hand may have saved in between), goes through the one
 * apply path, and puts its report in the outbox before the store records it.
 */
export async function runDaemon(options: DaemonOptions): Promise<{ code: number; output: unknown }> {
  const { paths, log, clock, runner } = options;
  let config: HostConfig = loadConfig(paths.configPath).config;
  const outbox = new Outbox(paths.stateDir, config.outbox);
  const startedAt = clock.monotonic();
  let quiesced = false;
  let current: Store | undefined;
  let link: LinkSession | undefined;
  let managerChoice: Promise<ManagerChoice> | undefined;
  /** The last applied (epoch, sequence) as the daemon last read it: deliveries are ordered against it at once. */
  let lastApplied: AppliedMark | undefined;
  /** Deliveries are handled one at a time, in the order the link brought them. */
  let deliveries: Promise<void> = Promise.resolve();

  const env = (store: Store): HostEnv => ({
    node: config.node,
    root: paths.root,
    stateDir: paths.stateDir,
    store,
    log,
    clock,
    accounts: systemAccounts(),
    handlers: HANDLERS,
    serviceManager: () => (managerChoice ??= chooseServiceManager(runner, config.serviceManager)),
    verifyPauseMs: config.verifyPauseMs,
    outbox,
    facts: async () => ({ links: await linksFact() }),
    archiveObjects: connectionArchiveObjects(() => link?.connection, () => (config.servers.length === 0 ? 'no servers are configured' : 'the link is not connected')),
    ...(config.archiveLimits ? { archiveLimits: config.archiveLimits } : {}),
    firewall: firewallEnv(runner, { root: paths.root, meshPrefix: config.meshTablePrefix }),
  });

  // The links are probed at most every 30 s: three `ip` processes an apply would cost more than the
  // apply itself, and links change on the scale of minutes (the reconcile's fingerprint reads them).
  let links: { at: number; value: Promise<Link[]> } | undefined;
  function linksFact(): Promise<Link[]> {
    if (!links || clock.monotonic() - links.at > 30_000) {
      links = { at: clock.monotonic(), value: probeLinks(runner, 2000).then((f) => f.links) };
    }
    return links.value;
  }

  /** Runs fn with the lock held and the store read afresh; the store it saves to is the one quiesce stops. */
  async function underLock<T>(what: string, fn: (store: Store) => Promise<T>): Promise<T> {
    if (quiesced) throw new Error('the host is ending: no apply or save may start');
    const lock = await acquireLock(paths.stateDir, { command: `mesh-host run (${what})`, timeoutMs: 120_000 });
    try {
      current = openStore(paths.stateDir, log);
      if (quiesced) current.quiesce();
      try {
        return await fn(current);
      } finally {
        lastApplied = current.state.lastApplied;
      }
    } finally {
      lock.release();
    }
  }

  const refusalKind = (message: string) =>
    /signature|pinned key|not an operator/.test(message) ? 'forged' : /declared for node/.test(message) ? 'wrong-node' : /stale|already applied/.test(message) ? 'stale' : 'invalid';

  /** A value of this node's key: checked (signature first), ordered, kept, and only then enqueued. */
  async function onDeclaration(bytes: Uint8Array, revision: number): Promise<void> {
    const buffer = Buffer.from(bytes);
    let received: Received;
    try {
      // Without a pinned key nothing the link brings can be trusted: refused before it is read.
      if (!config.publicKey) throw refused(`the delivery (revision ${revision}): no control-plane key is pinned; refused`);
      received = await receiveDeclaration(buffer, {
        source: `the delivery (revision ${revision})`,
        node: config.node,
        requireSignature: true,
        pinnedKey: config.publicKey,
      });
    } catch (err) {
      if (!(err instanceof HostError)) throw err;
      const message = [err.message, ...err.details].join('; ');
      const report = await underLock('refusal', async (store) => reportRefusal(env(store), { kind: refusalKind(message), message, trigger: 'delivery' }));
      actor.send({ type: 'REPORT_MADE', report: { sequence: report.sequence } });
      return;
    }
    const { declaration, digest } = received;
    const mark = { ...(declaration.epoch === undefined ? {} : { epoch: declaration.epoch }), sequence: declaration.sequence, digest };
    // The value this host kept and applied, read again after a restart or a move: not a new delivery.
    // (A new put of the same bytes has a new revision, and is one.)
    if (lastApplied?.digest === digest && sameKept(revision, digest)) {
      log.info({ revision, ...mark }, 'link: the declaration read is the one already kept and applied; nothing to do');
      return;
    }
    // Ordered against what was applied, without waiting for the apply in flight (the apply checks the
    // order again under the lock): a stale one is refused and reported.
    const problem = orderProblem(declaration, digest, lastApplied);
    if (problem) {
      const stale = await underLock('refusal', async (store) => reportRefusal(env(store), { kind: 'stale', message: `the delivery (revision ${revision}): ${problem}; nothing was touched`, trigger: 'delivery', declaration: mark }));
      return void actor.send({ type: 'REPORT_MADE', report: { sequence: stale.sequence } });
    }
    // Kept before it is enqueued: a reconcile always finds the newest the mesh said.
    writeDurably(join(paths.stateDir, KEPT_DECLARATION), buffer, 0o600);
    keepRevision(revision, digest);
    const delivery: CarriedDelivery = { ...mark, payload: received };
    log.info({ revision, ...mark }, 'link: delivery kept and enqueued');
    actor.send({ type: 'DELIVERY', delivery });
  }

  /**
   * A hint, not a record: written whole (rename) but not fsynced, because losing it in a crash costs only
   * a redundant apply and report after the restart, and an fsync would be on every delivery's path.
   */
  function keepRevision(revision: number, digest: string): void {
    const path = join(paths.stateDir, KEPT_REVISION);
    writeFileSync(`${path}.tmp`, JSON.stringify({ revision, digest }), { mode: 0o600 });
    renameSync(`${path}.tmp`, path);
  }

  function sameKept(revision: number, digest: string): boolean {
    try {
      const kept = JSON.parse(readFileSync(join(paths.stateDir, KEPT_REVISION), 'utf8')) as { revision?: unknown; digest?: unknown };
      return kept.revision === revision && kept.digest === digest;
    } catch {
      return false;
    }
  }

  async function applyPending(pending: Pending): Promise<WorkerOutput> {
    return underLock('apply', async (store) => {
      const hostEnv = env(store);
      let received: Received;
      let said: string[] = [];
      let mayChangeMode = true;
      if (pending.kind === 'delivery') received = (pending.delivery as CarriedDelivery).payload;
      else {
        // The reconcile reads the kept declaration now, when the worker starts: never a copy taken earlier.
        try {
          const source = await reconcileSource({ paths, config, store, env: hostEnv, hasKeptDeclaration: existsSync(join(paths.stateDir, KEPT_DECLARATION)) });
          ({ received, said, mayChangeMode } = source);
        } catch (err) {
          if (!(err instanceof HostError)) throw err;
          // A kept declaration changed on disk, or carried bytes genesis did not apply: refused, and said.
          const message = [err.message, ...err.details].join('; ');
          const report = reportRefusal(hostEnv, { kind: refusalKind(message), message, trigger: 'reconcile' });
          return { report: { sequence: report.sequence } };
        }
      }
      const result = await applyDeclaration(hostEnv, {
        received,
        origin: 'mesh',
        trigger: pending.kind === 'delivery' ? 'delivery' : 'reconcile',
        dryRun: false,
        mayChangeMode,
        said,
      });
      if (result.kind === 'refused') {
        const report = reportRefusal(hostEnv, { kind: refusalKind(result.reason), message: [result.reason, ...result.details].join('; '), trigger: pending.kind === 'delivery' ? 'delivery' : 'reconcile' });
        return { report: { sequence: report.sequence }, ...(store.state.mode ? { mode: store.state.mode } : {}) };
      }
      if (result.kind === 'planned') return {};
      const mode = store.state.mode;
      return { ...(result.kind === 'applied' ? { report: { sequence: result.report.sequence } } : {}), ...(mode ? { mode } : {}) };
    });
  }

  const machine = lifecycleMachine.provide({
    actors: {
      loadStore: fromPromise<LoadedStore>(async () => {
        config = loadConfig(paths.configPath).config;
        settingsWatch.settle(config);
        quiesced = false;
        return underLock('start', async (store) => ({
          enrolled: store.state.genesisDigest !== undefined || existsSync(join(paths.stateDir, KEPT_DECLARATION)),
          ...(store.state.mode ? { mode: store.state.mode } : {}),
          outbox: outbox.pending().map((sequence) => ({ sequence })),
        }));
      }),
      genesis: fromPromise<WorkerOutput, { bundle: unknown }>(async () => {
        throw new Error('a daemon is enrolled with mesh-host genesis BUNDLE, not over the link');
      }),
      link: fromCallback(({ sendBack }) => {
        if (config.servers.length === 0) {
          log.warn('link: no servers in the configuration; the host serves without a link');
          return () => {};
        }
        const session = new LinkSession(
          { settings: { servers: config.servers, name: `mesh-host ${config.node}`, ...linkAuthOf(config) }, node: config.node, log, signer: hostSigner(), ...(config.heartbeatMs ? { heartbeatMs: config.heartbeatMs } : {}), ...(config.rereadMs ? { rereadMs: config.rereadMs } : {}) },
          {
            onDeclaration: ({ bytes, revision }) => {
              deliveries = deliveries.then(() => onDeclaration(bytes, revision)).catch((err: Error) => log.error({ err }, 'link: a delivery could not be handled'));
            },
            onUp: () => sendBack({ type: 'LINK_UP' }),
            onDown: () => sendBack({ type: 'LINK_DOWN' }),
            status: async () => statusOf(),
            inventory: async () => takeInventory({ runner }),
            heartbeat: () => heartbeatOf(),
          },
        );
        link = session;
        session.open().catch((err: Error) => log.error({ err }, 'link: could not open'));
        return () => {
          if (link === session) link = undefined;
          void session.close();
        };
      }),
      reconcileTimer: fromCallback(({ sendBack }) => {
        const timer = setInterval(() => sendBack({ type: 'RECONCILE_TICK' }), config.reconcileIntervalMs);
        return () => clearInterval(timer);
      }),
      applyWorker: fromPromise<WorkerOutput, Pending>(({ input }) =>
        applyPending(input).catch((err: Error) => {
          log.error({ err, pending: input.kind }, 'the apply could not run');
          throw err;
        }),
      ),
      reportSender: fromPromise<void, { sequence: number }>(async ({ input }) => {
        if (!link?.connected) throw new Error('the link is not connected');
        // Fitted under the server's limit (less room for the subject and headers); gone means folded into a later one.
        const bytes = outbox.message(input.sequence, (link.maxPayload ?? Infinity) - REPORT_HEADROOM);
        if (!bytes) return void log.debug({ report: input.sequence }, 'link: report folded into a later one; nothing to send');
        const { duplicate } = await link.publishReport(input.sequence, bytes);
        outbox.remove(input.sequence);
        log.debug({ report: input.sequence, duplicate, bytes: bytes.length }, 'link: report acknowledged');
      }),
      quiesce: fromPromise<void, { ending: Ending }>(async ({ input }) => {
        quiesced = true;
        current?.quiesce();
        log.info({ ending: input.ending }, 'the host ends between applies: the store is quiesced');
      }),
    },
  });

  /** The host's own key signs its reports; one enrolled before keys existed makes its key now. */
  function hostSigner() {
    const key = ensureHostKey(paths.stateDir);
    if (key.made) log.warn({ key: key.publicKey }, 'this host had no key of its own: one is made now; its next report enrols it');
    const signer = reportSigner(key.seed);
    if (typeof signer === 'string') throw new Error(`the host key: ${signer}`);
    return signer;
  }

  function statusOf() {
    const state = existsSync(join(paths.stateDir, 'state.json')) ? JSON.parse(readFileSync(join(paths.stateDir, 'state.json'), 'utf8')) : {};
    return { node: config.node, mode: state.mode ?? null, lastApplied: state.lastApplied ?? null, reportSequence: state.reportSequence ?? 0, lastOutcome: state.lastOutcome ?? null, held: state.held ?? [], refusals: state.refusals ?? {}, footprint: Object.keys(state.records ?? {}).length, state: actor.getSnapshot().value };
  }
  function heartbeatOf() {
    const s = statusOf();
    return { node: s.node, reportSequence: s.reportSequence, lastApplied: s.lastApplied, uptimeSeconds: Math.round((clock.monotonic() - startedAt) / 1000) };
  }

  const actor = createActor(machine);
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
  actor.start();
  log.info({ node: config.node, servers: config.servers }, 'mesh-host run: started');
  const output = (await toPromise(actor)) as { ending?: string; failure?: string; abandoned?: boolean };
  settingsWatch.close();
  for (const s of signals) process.off(s, onSignal);
  if (output.failure) log.fatal({ failure: output.failure }, 'the host could not start');
  if (output.abandoned) log.warn('the apply in flight outlasted the grace and was left; the host stopped instead of standing aside or moving');
  log.info(output, 'mesh-host run: ended');
  return { code: output.failure ? 4 : 0, output };
}
