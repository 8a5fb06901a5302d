import type { AnyStateMachine, AnyStateNode } from 'xstate';

/** One transition of a machine definition, as drawn and as counted by the transition-cover test. */
export interface ChartTransition {
  /** A stable key: source, event, and which of that event's candidates (guards are tried in order). */
  key: string;
  source: string;
  event: string;
  targets: string[];
  guard?: string;
}

export interface ChartState {
  id: string;
  type: string;
  initial?: string;
  children: string[];
  invokes: string[];
}

export interface Chart {
  machine: string;
  states: ChartState[];
  transitions: ChartTransition[];
}

const guardName = (guard: unknown): string | undefined =>
  guard === undefined ? undefined : typeof guard === 'string' ? guard : ((guard as { type?: string }).type ?? 'inline');

/** A readable event name: `xstate.done.actor.applyWorker` → `done: applyWorker`. */
export function eventLabel(event: string): string {
  const m = /^xstate\.(done|error)\.actor\.(.+)$/.exec(event);
  if (m) return `${m[1]}: ${m[2]}`;
  const after = /^xstate\.after\.([^.]+)\./.exec(event);
  if (after) return `after ${after[1]}`;
  return event === '' ? 'always' : event;
}

function walk(node: AnyStateNode, out: AnyStateNode[]): void {
  out.push(node);
  for (const child of Object.values(node.states) as AnyStateNode[]) walk(child, out);
}

/** The machine as data: every state node and every transition of its definition (`on`, done/error, after, always). */
export function chartOf(machine: AnyStateMachine): Chart {
  const nodes: AnyStateNode[] = [];
  walk(machine.root, nodes);
  const states = nodes.map(
    (n): ChartState => ({
      id: n.id,
      type: n.type,
      ...(n.type === 'compound' && n.initial?.target?.[0] ? { initial: n.initial.target[0].id as string } : {}),
      children: (Object.values(n.states) as AnyStateNode[]).map((c) => c.id),
      invokes: n.invoke.map((i: { src: unknown; id: string }) => (typeof i.src === 'string' ? i.src : i.id)),
    }),
  );
  const transitions: ChartTransition[] = [];
  for (const n of nodes) {
    const lists: Array<[string, Array<{ target?: AnyStateNode[]; guard?: unknown }>]> = [...(n.transitions as Map<string, Array<{ target?: AnyStateNode[]; guard?: unknown }>>)];
    if (n.always?.length) lists.push(['', n.always as Array<{ target?: AnyStateNode[]; guard?: unknown }>]);
    for (const [event, candidates] of lists) {
      candidates.forEach((t, i) => {
        const guard = guardName(t.guard);
        transitions.push({
          key: `${n.id} ${event || 'always'} #${i}`,
          source: n.id,
          event,
          targets: (t.target ?? []).map((s) => s.id),
          ...(guard ? { guard } : {}),
        });
      });
    }
  }
  return { machine: machine.id, states, transitions };
}

const short = (id: string, machineId: string) => id.slice(machineId.length + 1) || machineId;
const mermaidId = (id: string) => id.replace(/[^A-Za-z0-9_]/g, '_');

/** Mermaid `stateDiagram-v2`: nested states as composite states, parallel regions separated by `--`. */
export function toMermaid(chart: Chart): string {
  const byId = new Map(chart.states.map((s) => [s.id, s]));
  const lines = ['stateDiagram-v2'];
  const draw = (state: ChartState, indent: string) => {
    for (const childId of state.children) {
      const child = byId.get(childId)!;
      const name = mermaidId(short(child.id, chart.machine));
      const label = child.id.split('.').pop()!;
      if (child.children.length === 0) {
        lines.push(`${indent}state "${label}${child.invokes.length ? ` (${child.invokes.join(', ')})` : ''}" as ${name}`);
        continue;
      }
      lines.push(`${indent}state "${label}${child.invokes.length ? ` (${child.invokes.join(', ')})` : ''}" as ${name} {`);
      if (child.type === 'parallel') {
        child.children.forEach((regionId, i) => {
          if (i > 0) lines.push(`${indent}  --`);
          draw({ ...child, children: [regionId] }, `${indent}  `);
        });
      } else {
        if (child.initial) lines.push(`${indent}  [*] --> ${mermaidId(short(child.initial, chart.machine))}`);
        draw(child, `${indent}  `);
      }
      lines.push(`${indent}}`);
    }
  };
  const root = byId.get(chart.machine)!;
  if (root.initial) lines.push(`  [*] --> ${mermaidId(short(root.initial, chart.machine))}`);
  draw(root, '  ');
  for (const t of chart.transitions) {
    const from = mermaidId(short(t.source, chart.machine));
    const label = `${eventLabel(t.event)}${t.guard ? ` [${t.guard}]` : ''}`;
    if (t.targets.length === 0) continue; // actions only: no arrow to draw
    for (const target of t.targets) lines.push(`  ${from} --> ${mermaidId(short(target, chart.machine))}: ${label}`);
  }
  for (const s of chart.states) if (s.type === 'final') lines.push(`  ${mermaidId(short(s.id, chart.machine))} --> [*]`);
  return lines.join('\n');
}

/** Graphviz DOT: compound states as clusters. */
export function toDot(chart: Chart): string {
  const byId = new Map(chart.states.map((s) => [s.id, s]));
  const lines = [`digraph "${chart.machine}" {`, '  compound=true; rankdir=LR; node [shape=box, style=rounded, fontname="Helvetica"]; edge [fontname="Helvetica", fontsize=10];'];
  const nodeName = (id: string) => JSON.stringify(id);
  const anchor = (id: string): string => {
    const s = byId.get(id)!;
    return s.children.length === 0 ? id : anchor(s.initial ?? s.children[0]!);
  };
  const draw = (state: ChartState, indent: string) => {
    for (const childId of state.children) {
      const child = byId.get(childId)!;
      const label = child.id.split('.').pop()! + (child.invokes.length ? `\\n(${child.invokes.join(', ')})` : '');
      if (child.children.length === 0) {
        lines.push(`${indent}${nodeName(child.id)} [label="${label}"${child.type === 'final' ? ', peripheries=2' : ''}];`);
        continue;
      }
      lines.push(`${indent}subgraph ${JSON.stringify(`cluster_${child.id}`)} {`, `${indent}  label="${label}${child.type === 'parallel' ? ' (parallel)' : ''}"; style=${child.type === 'parallel' ? 'dashed' : 'rounded'};`);
      draw(child, `${indent}  `);
      lines.push(`${indent}}`);
    }
  };
  draw(byId.get(chart.machine)!, '  ');
  for (const t of chart.transitions) {
    for (const target of t.targets) {
      const label = `${eventLabel(t.event)}${t.guard ? ` [${t.guard}]` : ''}`;
      const from = anchor(t.source);
      const to = anchor(target);
      const ltail = byId.get(t.source)!.children.length ? `, ltail=${JSON.stringify(`cluster_${t.source}`)}` : '';
      const lhead = byId.get(target)!.children.length ? `, lhead=${JSON.stringify(`cluster_${target}`)}` : '';
      lines.push(`  ${nodeName(from)} -> ${nodeName(to)} [label=${JSON.stringify(label)}${from === to ? '' : ltail + lhead}];`);
    }
  }
  lines.push('}');
  return lines.join('\n');
}
