import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { digestOf } from '../../core/declaration/envelope.js';
import { readDeclarationFile } from '../../core/declaration/load.js';
import { HALT_REASONS, orderNodes, parseWaves, splitWaves, type HaltReason, type Rollout } from '../fleet/rollout.js';
import { FleetListener } from '../fleet/rollout-listen.js';
import { RolloutStore } from '../fleet/rollout-store.js';
import { fleetReportVerifier, readEnrolments } from '../fleet/trust.js';
import { isRevisionConflict } from '../../link/revision.js';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import { durationFlag, stringFlag, type CommandContext } from '../../cli/context.js';
import { targetFlags } from './target-flags.js';
import { readSeed } from './keys-command.js';
import { connectWire, countFlag } from './mesh-flags.js';
import { needsApproval, trustForSigning } from './mesh-trust.js';
import type { SignOnce } from './propose.js';
import { openProposals } from './proposals.js';
import { openDeclarations, readNodeRecords } from './numbering.js';
import { proposeRollout, resumeSigned, type RolloutSigner } from './rollout-approval.js';
import { readOrRefuse, run } from './rollout-drive.js';
import { enrolledCurveKeys, Sealer } from './sealing.js';
import { fleetDeclaration, prepareFleetSend } from './send-many.js';
import { copyMaker, EMPTY_VALUES, labelsOf } from '../fleet/node-values.js';
import type { TargetChoice } from '../fleet/targets.js';
import { valuesFlag } from './values-flag.js';

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
  const seed = readSeed(key);
  return resume !== undefined ? resumeRollout(ctx, resume, key, seed) : startRollout(ctx, key, seed);
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

async function startRollout(ctx: CommandContext, keyFile: string, seed: string): Promise<number> {
  const choice = targetFlags(ctx);
  if (!choice || ctx.args.length !== 1) throw usageError("'rollout' needs FILE with --nodes A,B, --select K=V or --all (or --resume ID, --abort ID)");
  const file = ctx.args[0]!;
  const fields = fleetDeclaration(file, readDeclarationFile(file));
  const nc = await connectWire(ctx);
  try {
    const trust = await trustForSigning(nc, ctx, keyFile, seed);
    return await beginRollout(ctx, nc, { keyFile, seed, trust }, { file, fields, choice });
  } finally {
    await nc.close();
  }
}

/** What a rollout is made of: the declaration (or, for a rollback, each node's own) and the nodes. */
export interface RolloutMaking {
  file: string;
  fields: Record<string, unknown>;
  choice: TargetChoice;
  /** Each node's own declaration, sent as it is (a rollback's): no values are rendered into them. */
  declarations?: Record<string, Record<string, unknown>>;
}

/**
 * Checks, claims the nodes, writes the record and drives it: a rollout of a file and a rollback by waves
 * alike. Under a trust root that needs more than one signature, every copy is signed here once and the
 * rollout is left proposed: `meshctl approve` signs them all, once for every wave, and drives it.
 */
export async function beginRollout(ctx: CommandContext, nc: NatsConnection, signer: RolloutSigner, m: RolloutMaking): Promise<number> {
  const { seed } = signer;
  const wavesText = stringFlag(ctx.flags, 'waves') ?? DEFAULT_WAVES;
  const sizes = parseWaves(wavesText);
  if (typeof sizes === 'string') throw usageError(sizes);
  const waitMs = durationFlag(ctx, 'wait', DEFAULT_WAIT_MS);
  const haltOn = haltOnFlag(ctx);
  const epochFlag = countFlag(ctx, 'epoch', 0);
  // It listens, and opens its bucket, while it chooses the nodes and checks the declaration: no report is missed, and no round trip waits for another.
  const enrolments = readEnrolments(nc);
  const listener = new FleetListener(nc, fleetReportVerifier(enrolments));
  const values = m.declarations ? EMPTY_VALUES : valuesFlag(ctx);
  const [{ nodes, kv, records }, store] = await Promise.all([prepareFleetSend(nc, m.choice, m.file, m.fields, enrolments, values), RolloutStore.open(nc), listener.start()]);
  // The record holds no sensitive value in the clear: each is sealed to meshctl's own curve key.
  const kept = new Sealer(seed, enrolledCurveKeys(() => enrolments)).sealForRecord(m.fields);
  const waves = splitWaves(orderNodes(nodes), sizes, wavesText);
  if (typeof waves === 'string') throw usageError(waves);
  const now = ctx.clock.now();
  const id = newId(now);
  await store.claim(id, nodes);
  const rollout: Rollout = {
    version: 1,
    id,
    file: m.file,
    digest: digestOf(Buffer.from(JSON.stringify(kept))),
    declaration: kept,
    ...(m.declarations ? { declarations: m.declarations } : {}),
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
  const trust = signer.trust;
  if (needsApproval(trust)) {
    listener.close();
    const once: SignOnce = { file: m.file, copyOf: m.declarations ? (n) => m.declarations![n] ?? m.fields : copyMaker(m.fields, values, labelsOf((await enrolments).enrolled())), records, epochFlag, seed, sealer: new Sealer(seed, enrolledCurveKeys(() => enrolments)) };
    return proposeRollout(ctx, nc, store, { ...signer, trust }, rollout, 0, once, waves.flat());
  }
  const revision = await store.write(rollout, 0);
  return run(ctx, nc, { store, kv, records, seed, enrolments, listener, values }, rollout, revision, 'started');
}

async function resumeRollout(ctx: CommandContext, id: string, keyFile: string, seed: string): Promise<number> {
  const nc = await connectWire(ctx);
  try {
    const store = await RolloutStore.open(nc);
    const { rollout, revision } = await readOrRefuse(store, id);
    if (rollout.status === 'done') {
      ctx.print(ctx.json ? JSON.stringify({ event: 'done', id, already: true }) : `rollout ${id} is done already: nothing to resume`);
      return EXIT.ok;
    }
    if (rollout.status === 'aborted') throw refused(`rollout ${id} was aborted: it cannot be resumed; start a new rollout of ${rollout.file}`);
    if (rollout.status === 'proposed') throw refused(`rollout ${id} waits for approval: nothing was sent`, [`meshctl approve ${rollout.proposal} --key ANOTHER-CONTROL-KEY signs it and drives it; meshctl rollout --abort ${id} withdraws it`]);
    const trust = await trustForSigning(nc, ctx, keyFile, seed);
    if (rollout.status === 'running' && ownerAlive(rollout.owner, ctx.clock.now().getTime())) {
      throw refused(`rollout ${id} is being driven by another meshctl (${rollout.owner!.host} pid ${rollout.owner!.pid}, its last write at ${rollout.owner!.beatAt}): nothing was done`, ['wait for it, or stop it with meshctl rollout --abort ' + id]);
    }
    await store.claim(id, Object.keys(rollout.nodes));
    const enrolments = readEnrolments(nc);
    const [kv, records] = await Promise.all([openDeclarations(nc), readNodeRecords(nc)]);
    const values = valuesFlag(ctx);
    if (rollout.signed && needsApproval(trust)) return await resumeSigned(ctx, nc, { store, kv, records, seed, enrolments, values }, { keyFile, seed, trust }, rollout, revision);
    // Signed copies are for a trust root that needed them: under a threshold of 1 the rollout signs its own again.
    const { signed: _, ...unsigned } = rollout;
    return await run(ctx, nc, { store, kv, records, seed, enrolments, values }, needsApproval(trust) ? rollout : unsigned, revision, 'resumed');
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
      if (rollout.proposal) await (await openProposals(nc)).delete(rollout.proposal);
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
