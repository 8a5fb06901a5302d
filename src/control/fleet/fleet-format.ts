import { describeOrder } from '../../core/declaration/order.js';
import { formatAgo, FLEET_STATES, type FleetRow } from './fleet.js';

const COLUMNS = ['NODE', 'LABELS', 'STATE', 'MODE', 'LAST OUTCOME', 'APPLIED', 'NEWEST', 'REPORT', 'TRUST', 'HEARTBEAT'] as const;

/** A row of the view, with the labels of the node's enrolment when it has them. */
export type LabelledRow = FleetRow & { labels?: Record<string, string> };

/** `role=web,site=a`, in key order; `-` for none. */
function labelsText(labels: Record<string, string> | undefined): string {
  const pairs = Object.entries(labels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return pairs.length ? pairs.map(([k, v]) => `${k}=${v}`).join(',') : '-';
}

function cells(row: LabelledRow): string[] {
  const outcome = row.lastOutcome ? `${row.lastOutcome.outcome} ${formatAgo(row.lastOutcome.agoMs)} ago (${row.lastOutcome.trigger})` : '-';
  return [
    row.node,
    labelsText(row.labels),
    row.state,
    row.mode ?? '-',
    outcome,
    row.lastApplied ? describeOrder(row.lastApplied) : '-',
    row.newest ? describeOrder(row.newest) : '-',
    row.reportSequence === null ? '-' : `#${row.reportSequence}`,
    row.trustVersion === null ? '-' : `v${row.trustVersion}${row.trustBehind ? ' (behind)' : ''}`,
    row.heartbeat ? `${formatAgo(row.heartbeat.agoMs)} ago` : 'never',
  ];
}

/**
 * The fleet at a glance: a count by state, then one line a node, worst first, each line followed by
 * what is wrong with it (the failing resource and its message, the silence, what it is behind).
 */
export function formatFleet(rows: LabelledRow[]): string {
  if (rows.length === 0) return 'no nodes: the mesh has no declarations, reports or heartbeats yet';
  const counts = FLEET_STATES.map((s) => [s, rows.filter((r) => r.state === s).length] as const).filter(([, n]) => n > 0);
  const table = [COLUMNS as readonly string[], ...rows.map(cells)];
  const widths = COLUMNS.map((_, i) => Math.max(...table.map((line) => line[i]!.length)));
  const line = (values: readonly string[]) => values.map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]!))).join('  ');
  const out = [`${rows.length} node${rows.length === 1 ? '' : 's'}: ${counts.map(([s, n]) => `${n} ${s}`).join(', ')}`, line(table[0]!)];
  rows.forEach((row, i) => {
    out.push(line(table[i + 1]!));
    for (const problem of row.problems) out.push(`  ${problem}`);
  });
  return out.join('\n');
}
