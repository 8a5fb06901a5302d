import type { PlanAnswer } from '../../engine/report/report-preview.js';
import { formatStep } from '../../engine/report/report.js';
import type { Step } from '../../engine/converge/handler-types.js';

/** What became of one node's plan request: its answer, none within the time, or never asked (its copy could not be made: a value missing). */
export type PlanLine = (PlanAnswer | { node: string; outcome: 'no-answer'; reason: string } | { node: string; outcome: 'unsent'; reason: string }) & {
  /** Under --diff, the per-node values its copy used (a sensitive one without its value). */
  values?: Array<{ key: string; from: string; value?: unknown; sensitive?: true }>;
};

/** One change made the same on several nodes: the step (as the first node said it) and who would take it. */
export interface ChangeGroup {
  step: Step;
  nodes: string[];
}

/**
 * What makes two nodes' steps the same change: the resource's kind and path, the verb and the typed
 * changes (which carry no time, no scratch path and no node). Two hosts whose `/etc/app.conf` gains a
 * line and loses one group together; one that gains two does not.
 */
export function changeKey(step: Step): string {
  return JSON.stringify([step.type, step.target, step.verb, step.changes]);
}

/** Every change across the answers, grouped by changeKey, the most common first (then by path). */
export function groupChanges(lines: PlanLine[]): ChangeGroup[] {
  const groups = new Map<string, ChangeGroup>();
  for (const line of lines) {
    if (line.outcome !== 'planned') continue;
    for (const step of line.steps) {
      const key = changeKey(step);
      const group = groups.get(key) ?? groups.set(key, { step, nodes: [] }).get(key)!;
      group.nodes.push(line.node);
    }
  }
  return [...groups.values()].sort((a, b) => b.nodes.length - a.nodes.length || (a.step.target < b.step.target ? -1 : a.step.target > b.step.target ? 1 : 0));
}

/** Diffs that read the same on several nodes, shown once with who they are for. */
function groupDiffs(lines: PlanLine[]): Array<{ target: string; diff: string; nodes: string[] }> {
  const groups = new Map<string, { target: string; diff: string; nodes: string[] }>();
  for (const line of lines) {
    if (line.outcome !== 'planned') continue;
    for (const d of line.diffs ?? []) {
      const key = `${d.target}\n${d.diff}`;
      (groups.get(key) ?? groups.set(key, { target: d.target, diff: d.diff, nodes: [] }).get(key)!).nodes.push(line.node);
    }
  }
  return [...groups.values()].sort((a, b) => b.nodes.length - a.nodes.length);
}

/** Puppet's `--detailed-exitcodes`, for a fleet: 0 no node would change, 2 some would, 4 some would refuse, 6 both; 1 when a node did not answer. */
export function planExitCode(lines: PlanLine[]): number {
  if (lines.some((l) => l.outcome === 'no-answer')) return 1;
  const change = lines.some((l) => l.outcome === 'planned' && l.steps.length > 0) ? 2 : 0;
  const refuse = lines.some((l) => l.outcome === 'refused' || l.outcome === 'unsent') ? 4 : 0;
  return change + refuse;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
/** Node names, the first few, for a line that is not every node's. */
const names = (nodes: string[]) => (nodes.length <= 8 ? nodes.join(', ') : `${nodes.slice(0, 8).join(', ')}, … (${nodes.length - 8} more)`);

/**
 * The fleet's plan at a glance: a count; each change once with how many nodes would make it (and which,
 * when not all); the diffs, grouped the same way; what would be held; the refusals, node by node; the
 * nodes with nothing to do; those that did not answer.
 */
export function formatFleetPlan(lines: PlanLine[], timeout: string, values: Array<{ node: string; values: string }> = []): string {
  const planned = lines.filter((l): l is Extract<PlanLine, { outcome: 'planned' }> => l.outcome === 'planned');
  const changing = planned.filter((l) => l.steps.length > 0);
  const refused = lines.filter((l): l is Extract<PlanLine, { outcome: 'refused' }> => l.outcome === 'refused');
  const silent = lines.filter((l): l is Extract<PlanLine, { outcome: 'no-answer' }> => l.outcome === 'no-answer');
  const unsent = lines.filter((l): l is Extract<PlanLine, { outcome: 'unsent' }> => l.outcome === 'unsent');
  const out = [`plan for ${plural(lines.length, 'node')}: ${changing.length} would change, ${planned.length - changing.length} would not, ${refused.length} would refuse, ${silent.length} did not answer${unsent.length ? `, ${unsent.length} could not be sent` : ''}`];
  const groups = groupChanges(lines);
  if (groups.length > 0) out.push('');
  const width = String(Math.max(0, ...groups.map((g) => g.nodes.length))).length;
  for (const g of groups) {
    const who = g.nodes.length === changing.length ? '' : `  (${names(g.nodes)})`;
    out.push(`${String(g.nodes.length).padStart(width)} ${g.nodes.length === 1 ? 'node: ' : 'nodes:'} ${formatStep(g.step)}${who}`);
  }
  for (const d of groupDiffs(lines)) out.push('', `${plural(d.nodes.length, 'node')}${d.nodes.length === changing.length ? '' : ` (${names(d.nodes)})`}: ${d.target}`, d.diff.trimEnd());
  for (const l of planned) if (l.diffsLeftOut) out.push('', `${l.node}: ${l.diffsLeftOut}`);
  const held = planned.flatMap((l) => l.held.map((h) => `  ${l.node}: ${h.target} (${h.resource})`));
  if (held.length > 0) out.push('', 'would hold (left as found):', ...held);
  if (refused.length > 0) out.push('', 'would refuse:', ...refused.map((l) => `  ${l.node}: ${l.refusal}: ${[l.reason, ...l.details].join('; ')}`));
  const idle = planned.filter((l) => l.steps.length === 0).map((l) => l.node);
  if (idle.length > 0) out.push('', `nothing to do: ${names(idle)}`);
  if (silent.length > 0) out.push('', `did not answer within ${timeout}:`, ...silent.map((l) => `  ${l.node}: ${l.reason}`));
  if (unsent.length > 0) out.push('', 'could not be sent (nothing would be):', ...unsent.map((l) => `  ${l.reason}`));
  if (values.length > 0) out.push('', "each node's values:", ...values.map((v) => `  ${v.node}: ${v.values}`));
  return out.join('\n');
}
