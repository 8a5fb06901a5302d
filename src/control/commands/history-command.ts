import { describeOrder } from '../../core/declaration/order.js';
import type { NatsConnection } from '@nats-io/transport-node';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import type { CommandContext } from '../../cli/context.js';
import { describeAge } from '../../link/control.js';
import { HISTORY_STREAM } from '../../link/wire.js';
import { lazy } from '../../core/system/interop.js';
import { changedSince, currentEntry, describeOutcome, entryNumbered, previousPut, readHistory, shortKey, type HistoryEntry } from '../fleet/history.js';
import { declarationChanges, formatChanges, redacted } from '../fleet/declaration-diff.js';
import { readEnrolments } from '../fleet/trust.js';
import { connectWire, countFlag } from './mesh-flags.js';
import { readable, reportFilterFlags } from './output-flags.js';

/** A node id as the wire names it. */
export function nodeArg(ctx: CommandContext, command: string): string {
  const node = ctx.args[0];
  if (node === undefined) throw usageError(`'${command}' needs NODE`);
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(node)) throw usageError(`'${node}' is not a node id`);
  return node;
}

/** The node's history, or refused when the mesh kept nothing for it. */
async function historyOf(nc: NatsConnection, node: string): Promise<HistoryEntry[]> {
  const entries = await readHistory(nc, node, readEnrolments(nc));
  if (entries.length === 0) throw refused(`the mesh keeps no declaration for ${node} (in ${HISTORY_STREAM})`, ['a node is given one with meshctl send (or a rollout); the history holds what the declarations bucket held when it was made (the last 5 of each node) and every put since']);
  return entries;
}

/** What the history stream keeps, as the operator set it. */
async function retention(nc: NatsConnection): Promise<string> {
  const { jetstreamManager } = await lazy(import('@nats-io/jetstream'));
  const info = await (await jetstreamManager(nc)).streams.info(HISTORY_STREAM);
  return describeAge(info.config.max_age);
}

/** Whether the put added, removed or changed the resource (by its id, or its path, unit or name). */
function changesResource(before: HistoryEntry | undefined, entry: HistoryEntry, resource: string): boolean {
  if (!entry.declaration) return false;
  const named = (r: unknown) => {
    const f = (r ?? {}) as Record<string, unknown>;
    return [f.id, f.path, f.unit, f.name].includes(resource);
  };
  const of = (d: Record<string, unknown> | undefined) => JSON.stringify((Array.isArray(d?.resources) ? d.resources : []).filter(named));
  return of(before?.declaration) !== of(entry.declaration);
}

/** One line an entry: its number, when, its outcome, who signed it, how many resources, what changed. */
function entryLine(entry: HistoryEntry, before: HistoryEntry | undefined, current: HistoryEntry | undefined): string {
  if (entry.operation === 'delete') return `${'removed'.padEnd(14)}  ${entry.at}  the key was removed`;
  if (!entry.mark) return `${'unreadable'.padEnd(14)}  ${entry.at}  not a signed declaration`;
  const resources = Array.isArray(entry.declaration?.resources) ? entry.declaration.resources.length : 0;
  const now = entry === current ? '  ← its key holds this' : '';
  return `${describeOrder(entry.mark).padEnd(14)}  ${entry.at}  ${describeOutcome(entry.outcome)}  signed by ${shortKey(entry.signedBy)}  ${resources} resource${resources === 1 ? '' : 's'}  ${changedSince(before, entry)}${now}`;
}

/** The entry as `--json` gives it: everything but the declaration (meshctl show gives that). */
const entryJson = (e: HistoryEntry) => {
  const { declaration: _, ...rest } = e;
  return rest;
};

/**
 * `meshctl history NODE [--since T] [--until T] [--outcome O] [--resource R] [--keep-history DURATION]`: every declaration
 * the node was given that the mesh keeps, oldest first: its number, when it was put, what became of it
 * by the node's reports, who signed it, and what it changed (--resource: only those that changed it).
 * --keep-history sets how long the mesh keeps them.
 */
export async function historyCommand(ctx: CommandContext): Promise<number> {
  const node = nodeArg(ctx, 'history');
  const filter = reportFilterFlags(ctx);
  const nc = await connectWire(ctx);
  try {
    const entries = await historyOf(nc, node);
    const current = currentEntry(entries);
    const shown = entries.filter((e) => {
      const at = Date.parse(e.at);
      if (filter.sinceMs !== undefined && at < filter.sinceMs) return false;
      if (filter.untilMs !== undefined && at >= filter.untilMs) return false;
      if (filter.resource !== undefined && !changesResource(previousPut(entries, e), e, filter.resource)) return false;
      return !filter.outcomes || (e.outcome?.kind === 'reported' && filter.outcomes.includes(e.outcome.outcome));
    });
    if (!readable(ctx)) {
      ctx.print(shown.map((e) => JSON.stringify(entryJson(e))).join('\n') || (ctx.json ? '' : `no declaration of ${node} matches`));
      return EXIT.ok;
    }
    const lines = [`${node}: ${shown.length} of ${entries.length} declaration${entries.length === 1 ? '' : 's'} kept (the mesh keeps them ${await retention(nc)})`];
    for (const e of shown) lines.push(entryLine(e, previousPut(entries, e), current));
    ctx.print(lines.join('\n'));
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}

/** The entry `--sequence N` (with `--epoch E`) names, or the one the key holds; refused naming what there is. */
function chosen(entries: HistoryEntry[], node: string, sequence: number | undefined, epoch: number | undefined): HistoryEntry {
  const found = sequence === undefined ? currentEntry(entries) : entryNumbered(entries, sequence, epoch);
  if (found?.declaration) return found;
  const known = entries.flatMap((e) => (e.mark ? [describeOrder(e.mark)] : []));
  throw refused(sequence === undefined ? `the key of ${node} holds no declaration now` : `the mesh keeps no declaration of ${node} with ${describeOrder(epoch === undefined ? { sequence } : { epoch, sequence })}${epoch === undefined ? ' (in any epoch)' : ''}`, [`it keeps: ${known.slice(-20).join('; ') || 'none'}`]);
}

/** `meshctl show NODE [--sequence N] [--epoch E]`: the declaration as signed, a sensitive value never shown. */
export async function showCommand(ctx: CommandContext): Promise<number> {
  const node = nodeArg(ctx, 'show');
  const sequence = countFlag(ctx, 'sequence', 1);
  const epoch = countFlag(ctx, 'epoch', 0);
  const nc = await connectWire(ctx);
  try {
    const entries = await historyOf(nc, node);
    const e = chosen(entries, node, sequence, epoch);
    const declaration = redacted(e.declaration!);
    if (!readable(ctx)) {
      ctx.print(JSON.stringify({ ...entryJson(e), declaration }, null, ctx.json ? undefined : 2));
      return EXIT.ok;
    }
    ctx.print(
      [
        `${node}, ${describeOrder(e.mark!)}: put ${e.at}, signed by ${e.signedBy}, ${e.digest}`,
        `outcome: ${describeOutcome(e.outcome)}${e === currentEntry(entries) ? '; its key holds it now' : ''}`,
        JSON.stringify(declaration, null, 2),
      ].join('\n'),
    );
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}

/** `meshctl diff NODE A [B]`: what changed from sequence A to B (the key's now, when B is not given), resource by resource. */
export async function diffCommand(ctx: CommandContext): Promise<number> {
  const node = nodeArg(ctx, 'diff');
  const numbers = ctx.args.slice(1).map((a) => {
    if (!/^\d+$/.test(a) || Number(a) < 1) throw usageError(`'${a}' is not a sequence (a whole number, from meshctl history ${node})`);
    return Number(a);
  });
  const epoch = countFlag(ctx, 'epoch', 0);
  const nc = await connectWire(ctx);
  try {
    const entries = await historyOf(nc, node);
    const a = chosen(entries, node, numbers[0], epoch);
    const b = chosen(entries, node, numbers[1], epoch);
    const changes = declarationChanges(a.declaration!, b.declaration!);
    if (!readable(ctx)) {
      ctx.print(JSON.stringify({ node, from: a.mark, to: b.mark, changes }));
      return EXIT.ok;
    }
    ctx.print([`--- ${node} ${describeOrder(a.mark!)} (${a.at}, ${describeOutcome(a.outcome)})`, `+++ ${node} ${describeOrder(b.mark!)} (${b.at}, ${describeOutcome(b.outcome)})`, ...formatChanges(changes)].join('\n'));
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}
