import type { Enrolment } from '../../link/enrolment.js';
import { refused, usageError } from '../../core/system/errors.js';
import { describeLabels, describeSelector, matches, parseSelector, type SelectorTerm } from './labels.js';

/** Which nodes a fleet command is for: named, selected by labels, or every enrolled node. */
export type TargetChoice = { kind: 'nodes'; nodes: string[] } | { kind: 'select'; selector: SelectorTerm[] } | { kind: 'all' };

/** `--nodes a,b` | `--select k=v,…` | `--all`: exactly one, or a usage error; undefined when none is given. */
export function targetChoice(given: { nodes: string[]; select?: string; all: boolean }): TargetChoice | undefined {
  const count = [given.nodes.length > 0, given.select !== undefined, given.all].filter(Boolean).length;
  if (count > 1) throw usageError('give one of --nodes, --select and --all');
  if (given.nodes.length > 0) return { kind: 'nodes', nodes: [...new Set(given.nodes)] };
  if (given.select !== undefined) {
    const selector = parseSelector(given.select);
    if (typeof selector === 'string') throw usageError(selector);
    return { kind: 'select', selector };
  }
  return given.all ? { kind: 'all' } : undefined;
}

/**
 * The nodes a choice names, every one with a key in the mesh (pinned, or enrolled from its first
 * report). A named node without one, a selector that matches nothing, a mesh with no node: refused,
 * naming what is there instead, before anything is sent.
 */
export function resolveTargets(choice: TargetChoice, enrolled: Array<{ node: string; enrolment: Enrolment }>, nothing = 'nothing was sent'): string[] {
  const known = new Map(enrolled.map((e) => [e.node, e.enrolment]));
  if (choice.kind === 'nodes') {
    const missing = choice.nodes.filter((n) => !known.has(n));
    if (missing.length > 0) {
      throw refused(`${missing.join(', ')} ${missing.length === 1 ? 'has' : 'have'} no key in the mesh: ${nothing}`, [
        `a node's key is made and pinned with meshctl node-key NODE (or enrolled from its first signed report); the mesh knows ${known.size} node${known.size === 1 ? '' : 's'}${known.size ? `: ${[...known.keys()].slice(0, 10).join(', ')}${known.size > 10 ? ', …' : ''}` : ''}`,
      ]);
    }
    return choice.nodes;
  }
  if (known.size === 0) throw refused(`the mesh has no node with a key yet: ${nothing}`, ['make one with meshctl node-key NODE, and enrol the host with its bundle']);
  if (choice.kind === 'all') return [...known.keys()];
  const chosen = [...known].filter(([, e]) => matches(e.labels, choice.selector)).map(([n]) => n);
  if (chosen.length === 0) throw refused(`no node's labels match ${describeSelector(choice.selector)}: ${nothing}`, [`the labels the mesh holds: ${labelCounts(enrolled) || 'none (meshctl label NODE k=v sets them)'}`]);
  return chosen;
}

/** `role=web (3), role=db (1)`: which labels the fleet has, most common first. */
function labelCounts(enrolled: Array<{ enrolment: Enrolment }>): string {
  const counts = new Map<string, number>();
  for (const { enrolment } of enrolled) for (const label of describeLabels(enrolment.labels).split(', ').filter(Boolean)) counts.set(label, (counts.get(label) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]).slice(0, 12).map(([l, n]) => `${l} (${n})`).join(', ');
}
