import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { digestOf } from '../../declaration/envelope.js';
import { readDeclarationFile } from '../../declaration/load.js';
import { HALT_REASONS, orderNodes, parseWaves, resumeNodes, splitWaves, type HaltReason, type ReportHeard, type Rollout } from '../../fleet/rollout.js';
import { FleetListener } from '../../fleet/rollout-listen.js';
import { RolloutStore } from '../../fleet/rollout-store.js';
import { describeEvent, progressLine, type RolloutEvent } from '../../fleet/rollout-view.js';
import { fleetReportVerifier, readEnrolments } from '../../fleet/trust.js';
import type { Enrolments } from '../../link/enrolment.js';
import { isRevisionConflict } from '../../link/revision.js';
import { ROLLOUTS_BUCKET } from '../../link/wire.js';
import { EXIT, refused, usageError } from '../../system/errors.js';
import { durationFlag, stringFlag, type CommandContext } from '../context.js';
import { targetFlags } from '../target-flags.js';
import { readSeed } from './keys.js';
import { connectWire, countFlag } from './mesh.js';
import { openDeclarations, readNodeRecords, type NodeRecord } from './numbering.js';
import { drive, type Driver } from './rollout-run.js';
import { fleetDeclaration, prepareFleetSend } from './send-many.js';

const DEFAULT_WAVES = '1,10%,50%,100%';
const DEFAULT_WAIT_MS = 120_000;
/** Another host's meshctl is taken for alive while it wrote the record this recently (it writes every 5 s while it waits). */
const OWNER_STALE_MS = 20_000;

/**
 * `meshctl rollout FILE --nodes|--select|--all [--waves 1,10%,50%,100%] [--wait 120s] [--halt-on failed,refused,silent]`,
 * `meshctl rollout --resume ID`, `meshctl rollout --abort ID`: the declaration sent wave by wave over
 * the nodes in the order of their hash, each wave's reports awaited before the next is sent; the first
 * node that fails, is refused or stays silent halts it (exit 1), and nodes of later waves keep what they have.
 */
export async function rolloutCommand(ctx: CommandContext): Promise<number> {
  const resume = stringFlag(ctx.flags, 'resume');
  const abort = stringFlag(ctx.flags, 'abort');
  if (resume !== undefined && abort !== undefined) throw usageError('give --resume ID or --abort ID, not both');
  const id = resume ?? abort;
  if (id !== undefined && (ctx.args.length > 0 || targetFlags(ctx))) throw usageError(`--${resume ? 'resume' : 'abort'} ${id} takes up a rollout as it was made: no FILE, --nodes, --select or --all`);
  if (abort !== undefined) return abortRollout(ctx, abort);
  const key = stringFlag(ctx.flags, 'key');
  if (!key) throw usageError('each node is sent its own signed copy: give --key FILE (or the mesh directory, --mesh DIR)');
  return resume !== undefined ? resumeRollout(ctx, resume, readSeed(key)) : startRollout(ctx, readSeed(key));
}

function haltOnFlag(ctx: CommandContext): HaltReason[] {
  const text = stringFlag(ctx.flags, 'halt-on') ?? HALT_REASONS.join(',');
  const reasons = text.split(',').map((r) => r.trim());
  const wrong = reasons.filter((r) => !(HALT_REASONS as readonly string[]).includes(r));
  if (wrong.length > 0 || reasons.length === 0) throw usageError(`--halt-on ${text}: ${wrong.map((w) => `'${w}'`).join(', ')} is not one of ${HALT_REASONS.join(', ')} (joined by commas)`);
  return [...new Set(reasons)] as HaltReason[];
}

/** `r-20261203-091502-3fa2`: sorts by when it was made, and two made in one second still differ. */
const newId = (now: Date) => `r-${now.toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-')}-${randomBytes(2).toString('hex')}`;

async function startRollout(ctx: CommandContext, seed: string): Promise<number> {
  const choice = targetFlags(ctx);
  if (!choice || ctx.args.length !== 1) throw usageError("'rollout' needs FILE with --nodes A,B, --select K=V or --all (or --resume ID, --abort ID)");
  const file = ctx.args[0]!;
  const fields = fleetDeclaration(file, readDeclarationFile(file));
  const wavesText = stringFlag(ctx.flags, 'waves') ?? DEFAULT_WAVES;
  const sizes = parseWaves(wavesText);
  if (typeof sizes === 'string') throw usageError(sizes);
  const waitMs = durationFlag(ctx, 'wait', DEFAULT_WAIT_MS);
  const haltOn = haltOnFlag(ctx);
  const epochFlag = countFlag(ctx, 'epoch', 0);
  const nc = await connectWire(ctx);
  try {
    // It listens, and opens its bucket, while it chooses the nodes and checks the declaration: no report is missed, and no round trip waits for another.
    const enrolments = readEnrolments(nc);
    const listener = new FleetListener(nc, fleetReportVerifier(enrolments));
    const [{ nodes, kv, records }, store] = await Promise.all([prepareFleetSend(nc, choice, file, fields, enrolments), RolloutStore.open(nc), listener.start()]);
    const waves = splitWaves(orderNodes(nodes), sizes, wavesText);
    if (typeof waves === 'string') throw usageError(waves);
    const now = ctx.clock.now();
    const id = newId(now);
    await store.claim(id, nodes);
    const rollout: Rollout = {
      version: 1,
      id,
      file,
      digest: digestOf(Buffer.from(JSON.stringify(fields))),
      declaration: fields,
      ...(epochFlag === undefined ? {} : { epoch: epochFlag }),
      waves,
      wave: 0,
      waitMs,
      haltOn,
      status: 'running',
      nodes: Object.fromEntries(waves.flat().map((n) => [n, { phase: 'pending' }])),
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
    };
    const revision = await store.write(rollout, 0);
    return await run(ctx, nc, { store, kv, records, seed, enrolments, listener }, rollout, revision, 'started');
  } finally {
    await nc.close();
  }
}

async function resumeRollout(ctx: CommandContext, id: string, seed: string): Promise<number> {
  const nc = await connectWire(ctx);
  try {
    const store = await RolloutStore.open(nc);
    const { rollout, revision } = await readOrRefuse(store, id);
    if (rollout.status === 'done') {
      ctx.print(ctx.json ? JSON.stringify({ event: 'done', id, already: true }) : `rollout ${id} is done already: nothing to resume`);
      return EXIT.ok;
    }
    if (rollout.status === 'aborted') throw refused(`rollout ${id} was aborted: it cannot be resumed; start a new rollout of ${rollout.file}`);
    if (rollout.status === 'running' && ownerAlive(rollout.owner, ctx.clock.now().getTime())) {
      throw refused(`rollout ${id} is being driven by another meshctl (${rollout.owner!.host} pid ${rollout.owner!.pid}, its last write at ${rollout.owner!.beatAt}): nothing was done`, ['wait for it, or stop it with meshctl rollout --abort ' + id]);
    }
    await store.claim(id, Object.keys(rollout.nodes));
    const enrolments = readEnrolments(nc);
    const [kv, records] = await Promise.all([openDeclarations(nc), readNodeRecords(nc)]);
    return await run(ctx, nc, { store, kv, records, seed, enrolments }, rollout, revision, 'resumed');
  } finally {
    await nc.close();
  }
}

/** The owner of a running rollout is alive: its process on this machine, or a recent write from another. */
function ownerAlive(owner: Rollout['owner'], nowMs: number): boolean {
  if (!owner) return false;
  if (owner.host === hostname()) {
    if (owner.pid === process.pid) return false;
    try {
      process.kill(owner.pid, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
  return nowMs - Date.parse(owner.beatAt) < OWNER_STALE_MS;
}

interface Opened {
  store: RolloutStore;
  kv: Awaited<ReturnType<typeof openDeclarations>>;
  /** What the mesh held for every node when the rollout began or was resumed: read once; a put that finds a key moved since reads that one again. */
  records: Map<string, NodeRecord>;
  seed: string;
  enrolments: Promise<Enrolments>;
  /** Listening already (a new rollout begins to listen while it chooses its nodes). */
  listener?: FleetListener;
}

/** Listens, takes a halted rollout up again where it stopped, and drives it with the terminal's display or JSON lines. */
async function run(ctx: CommandContext, nc: NatsConnection, o: Opened, rollout: Rollout, revision: number, how: 'started' | 'resumed'): Promise<number> {
  const listener = o.listener ?? new FleetListener(nc, fleetReportVerifier(o.enrolments), new Set(Object.keys(rollout.nodes)));
  if (!o.listener) await listener.start();
  const nowMs = () => ctx.clock.now().getTime();
  let r = rollout;
  if (r.status === 'halted') {
    const { halt: _, ...rest } = r;
    const settled = Object.entries(r.nodes).filter(([, p]) => p.phase === 'failed' || p.phase === 'refused').map(([n]) => n);
    const trusted = new Map<string, ReportHeard>();
    for (const n of settled) if (await listener.trusted(n)) trusted.set(n, listener.reports.get(n)!);
    r = { ...rest, status: 'running', nodes: resumeNodes(r, trusted, nowMs()) };
  }
  const tty = !ctx.json && process.stdout.isTTY === true;
  let shown = false;
  const emit = (e: RolloutEvent) => {
    const line = ctx.json ? JSON.stringify(e) : describeEvent(e);
    if (line === undefined) return;
    if (shown) process.stdout.write('\r\x1b[K');
    shown = false;
    ctx.print(line);
  };
  const driver: Driver = {
    store: o.store,
    copy: { nc, kv: o.kv, file: r.file, fields: r.declaration, seed: o.seed, epochFlag: r.epoch },
    listener,
    records: o.records,
    emit,
    progress: (now, elapsedMs) => {
      if (!tty) return;
      process.stdout.write(`\r\x1b[K${progressLine(now, elapsedMs)}`);
      shown = true;
    },
    nowMs,
    owner: { host: hostname(), pid: process.pid },
  };
  emit({ ...(how === 'started' ? { event: 'started' as const } : { event: 'resumed' as const }), id: r.id, file: r.file, digest: r.digest, nodes: Object.keys(r.nodes).length, waves: r.waves.map((w) => w.length), waitMs: r.waitMs, haltOn: r.haltOn });
  try {
    return await drive(driver, r, revision);
  } finally {
    listener.close();
  }
}

async function readOrRefuse(store: RolloutStore, id: string): Promise<{ rollout: Rollout; revision: number }> {
  const found = await store.read(id);
  if (found) return found;
  const known = (await store.list()).slice(0, 10).map((r) => `${r.id} (${r.status}, ${r.file})`);
  throw refused(`no rollout ${id} in ${ROLLOUTS_BUCKET}`, [known.length ? `the newest it holds: ${known.join('; ')}` : 'it holds none']);
}

/** `--abort ID`: the rollout is marked aborted and gives its nodes back; a meshctl driving it stops at its next write. */
async function abortRollout(ctx: CommandContext, id: string): Promise<number> {
  const nc = await connectWire(ctx);
  try {
    const store = await RolloutStore.open(nc);
    for (;;) {
      const { rollout, revision } = await readOrRefuse(store, id);
      if (rollout.status === 'done' || rollout.status === 'aborted') throw refused(`rollout ${id} is ${rollout.status} already: nothing to abort`);
      const at = ctx.clock.now().toISOString();
      try {
        await store.write({ ...rollout, status: 'aborted', updatedAt: at, owner: { host: hostname(), pid: process.pid, beatAt: at } }, revision);
      } catch (err) {
        if (isRevisionConflict(err)) continue;
        throw err;
      }
      await store.release(id);
      const phases = Object.values(rollout.nodes).map((p) => p.phase);
      const untouched = phases.filter((p) => p === 'pending').length;
      const summary = { event: 'aborted', id, converged: phases.filter((p) => p === 'converged').length, sent: phases.length - untouched, untouched };
      ctx.print(ctx.json ? JSON.stringify(summary) : `rollout ${id} aborted: ${summary.sent} node${summary.sent === 1 ? '' : 's'} had been sent it (${summary.converged} converged), ${untouched} never sent keep what they have`);
      return EXIT.ok;
    }
  } finally {
    await nc.close();
  }
}
