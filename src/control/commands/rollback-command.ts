import { describeOrder } from '../../core/declaration/order.js';
import type { NatsConnection } from '@nats-io/transport-node';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import { durationFlag, stringFlag, type CommandContext } from '../../cli/context.js';
import { listFlag } from '../../cli/link-flags.js';
import { entryNumbered, heldAt, lastGood, readHistory, type HistoryEntry } from '../fleet/history.js';
import { formatFleetPlan, planExitCode } from '../fleet/plan-view.js';
import { RolloutStore } from '../fleet/rollout-store.js';
import { inLanes } from '../fleet/lanes.js';
import { resolveTargets } from '../fleet/targets.js';
import { readEnrolments } from '../fleet/trust.js';
import { enrolledCurveKeys, Sealer } from './sealing.js';
import type { Enrolments } from '../../link/enrolment.js';
import { readSeed } from './keys-command.js';
import { connectWire, countFlag } from './mesh-flags.js';
import { needsApproval, requireControlKey, trustForSigning } from './mesh-trust.js';
import { propose, signOnce } from './propose.js';
import { openDeclarations, readNodeRecords } from './numbering.js';
import { askPlans } from './plan-command.js';
import { beginRollout } from './rollout-command.js';
import { describeSendLine, sendCopies, summaryOf, type SendLine } from './send-many.js';
import { targetFlags } from './target-flags.js';
import { nodeArg } from './history-command.js';

/** Histories read at once: each costs two consumers on the server, so a fleet is read a bounded number at a time. */
const HISTORIES_AT_ONCE = 32;

/** What a rollback puts back on one node, or why it cannot. */
type Chosen = { node: string; entry: HistoryEntry } | { node: string; refusal: string };

/** The earlier declaration as a new one: its number, epoch and node left for the send to give. */
function againOf(entry: HistoryEntry): Record<string, unknown> {
  const { sequence: _s, epoch: _e, node: _n, ...rest } = entry.declaration!;
  return rest;
}

/** Which earlier declaration each node gets back: `--to N`, what it held when the rollout began, or its last good one. */
function choose(node: string, entries: HistoryEntry[], how: { to?: number; rolloutAt?: string; rollout?: string }): Chosen {
  if (how.to !== undefined) {
    const entry = entryNumbered(entries, how.to);
    return entry?.declaration ? { node, entry } : { node, refusal: `the mesh keeps no declaration of ${node} with sequence ${how.to} (meshctl history ${node} lists them)` };
  }
  if (how.rolloutAt !== undefined) {
    const entry = heldAt(entries, how.rolloutAt);
    return entry?.declaration ? { node, entry } : { node, refusal: `${node} held no declaration when rollout ${how.rollout} began: nothing to put back` };
  }
  const entry = lastGood(entries);
  return entry ? { node, entry } : { node, refusal: `no earlier declaration of ${node} converged that differs from the one it holds: give --to N (meshctl history ${node} lists them)` };
}

/** The nodes: NODE, --nodes/--select/--all, or those a rollout sent its declaration to. */
async function nodesOf(ctx: CommandContext, nc: NatsConnection, enrolments: Promise<Enrolments>): Promise<{ nodes: string[]; rolloutAt?: string; rollout?: string }> {
  const rolloutId = stringFlag(ctx.flags, 'rollout');
  const choice = targetFlags(ctx);
  const given = [ctx.args.length > 0, choice !== undefined, rolloutId !== undefined].filter(Boolean).length;
  if (given !== 1) throw usageError("'rollback' needs NODE, or --nodes A,B, --select K=V, --all, or --rollout ID (one of them)");
  if (ctx.args.length > 0) return { nodes: [nodeArg(ctx, 'rollback')] };
  if (choice) return { nodes: resolveTargets(choice, (await enrolments).enrolled()) };
  const found = await (await RolloutStore.open(nc)).read(rolloutId!);
  if (!found) throw refused(`no rollout ${rolloutId} in the mesh (meshctl rollout lists them when it refuses a second one; the page shows them)`);
  const { rollout } = found;
  if (rollout.status === 'running') throw refused(`rollout ${rollout.id} is running: abort it first (meshctl rollout --abort ${rollout.id}), then roll it back`);
  const sent = Object.entries(rollout.nodes).filter(([, p]) => p.phase !== 'pending').map(([n]) => n);
  if (sent.length === 0) throw refused(`rollout ${rollout.id} sent nothing to any node: nothing to put back`);
  return { nodes: sent, rolloutAt: rollout.createdAt, rollout: rollout.id };
}

/**
 * `meshctl rollback NODE | --nodes A,B | --select K=V | --all | --rollout ID [--to N] [--dry-run] [--waves …]`:
 * each node is sent an earlier declaration again, under a new number, signed and put as a send puts it:
 * `--to N` its sequence N, `--rollout ID` what it held when that rollout began, else the newest earlier
 * one it converged to that differs from what it holds. `--dry-run` asks each host for its plan instead;
 * `--waves` sends it as a rollout. A node with nothing to put back is refused on its own line.
 */
export async function rollbackCommand(ctx: CommandContext): Promise<number> {
  const key = stringFlag(ctx.flags, 'key');
  if (!key) throw usageError('the earlier declaration is signed again under a new number: give --key FILE (or the mesh directory, --mesh DIR)');
  const seed = readSeed(key);
  const to = countFlag(ctx, 'to', 1);
  const dryRun = ctx.flags['dry-run'] === true;
  const nc = await connectWire(ctx);
  try {
    const trust = await trustForSigning(nc, ctx, key, seed);
    // Under a threshold above 1 the hosts answer a dry run only for a copy signed by as many keys: --sign adds them.
    const cosigners = listFlag(ctx.flags, 'sign').map((f) => {
      const other = readSeed(f);
      requireControlKey(trust, f, other);
      return other;
    });
    const enrolments = readEnrolments(nc);
    const { nodes, rolloutAt, rollout } = await nodesOf(ctx, nc, enrolments);
    const chosen = await inLanes(nodes, HISTORIES_AT_ONCE, async (node) => choose(node, await readHistory(nc, node, enrolments), { ...(to === undefined ? {} : { to }), ...(rolloutAt ? { rolloutAt, rollout } : {}) }));
    const back = new Map(chosen.flatMap((c) => ('entry' in c ? [[c.node, c.entry] as const] : [])));
    const refusals: SendLine[] = chosen.flatMap((c) => ('refusal' in c ? [{ node: c.node, outcome: 'refused' as const, reason: c.refusal }] : []));
    if (nodes.length === 1 && refusals.length === 1) throw refused((refusals[0] as Extract<SendLine, { outcome: 'refused' }>).reason);
    const going = nodes.filter((n) => back.has(n));
    const copyOf = (node: string) => againOf(back.get(node)!);
    const file = rollout ? `the rollback of ${rollout}` : `the rollback of ${going.length === 1 ? going[0] : `${going.length} nodes`}`;
    if (dryRun) {
      const lines = await askPlans(nc, going, copyOf, { file, records: await readNodeRecords(nc), seed, cosigners, epochFlag: countFlag(ctx, 'epoch', 0), diff: ctx.flags.diff === true, timeoutMs: durationFlag(ctx, 'timeout', 10_000) });
      const unsent = refusals.map((r) => ({ node: r.node, outcome: 'unsent' as const, reason: (r as Extract<SendLine, { outcome: 'refused' }>).reason }));
      ctx.print(ctx.json ? [...lines, ...unsent].map((l) => JSON.stringify(l)).join('\n') : [...going.map((n) => `${n}: would put back ${describeOrder(back.get(n)!.mark!)} (of ${back.get(n)!.at})`), formatFleetPlan([...lines, ...unsent], '10s')].join('\n'));
      return planExitCode([...lines, ...unsent]);
    }
    if (stringFlag(ctx.flags, 'waves') !== undefined) {
      if (going.length === 0) throw refused('no node has an earlier declaration to put back', refusals.map((r) => (r as Extract<SendLine, { outcome: 'refused' }>).reason));
      for (const r of refusals) ctx.print(ctx.json ? JSON.stringify(r) : describeSendLine(r, nodes));
      const declarations = Object.fromEntries(going.map((n) => [n, copyOf(n)]));
      return await beginRollout(ctx, nc, { keyFile: key, seed, trust }, { file, fields: declarations[going[0]!]!, choice: { kind: 'nodes', nodes: going }, declarations });
    }
    const records = await readNodeRecords(nc);
    if (needsApproval(trust)) {
      // Signed once, each node's earlier declaration under a new number; delivered on approval.
      if (going.length === 0) throw refused('no node has an earlier declaration to put back', refusals.map((r) => (r as Extract<SendLine, { outcome: 'refused' }>).reason));
      for (const r of refusals) ctx.print(ctx.json ? JSON.stringify(r) : describeSendLine(r, nodes));
      const once = { file, copyOf, records, epochFlag: countFlag(ctx, 'epoch', 0), seed, sealer: new Sealer(seed, enrolledCurveKeys(() => enrolments)) };
      const copies = [];
      for (const node of going) copies.push(await signOnce(once, node));
      return await propose(ctx, nc, trust, file, key, copies, { made: 'rollback' });
    }
    const sent = await sendCopies({ nc, kv: await openDeclarations(nc), file, fields: {}, copyOf, seed, epochFlag: countFlag(ctx, 'epoch', 0), sealer: new Sealer(seed, enrolledCurveKeys(() => enrolments)) }, going, records, () => true);
    const lines = [...sent, ...refusals];
    for (const line of lines) {
      const from = back.get(line.node);
      const again = from ? { back: { ...from.mark!, at: from.at } } : {};
      ctx.print(ctx.json ? JSON.stringify({ ...line, ...again }) : `${describeSendLine(line, nodes)}${from && line.outcome === 'sent' ? `: ${describeOrder(from.mark!)} of ${from.at} again` : ''}`);
    }
    if (!ctx.json) ctx.print(summaryOf(lines));
    return lines.every((l) => l.outcome !== 'refused') ? EXIT.ok : EXIT.failed;
  } finally {
    await nc.close();
  }
}
