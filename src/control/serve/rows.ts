import type { FleetRow } from '../fleet/fleet.js';
import type { Labels } from '../fleet/labels.js';
import type { PageRow } from '../page/page-wire.js';

/**
 * A fleet row as the page gets it: ages become the instants they count from (the page ages them
 * itself), and the node's labels join it.
 */
export function pageRow(row: FleetRow, labels: Labels | undefined, nowMs: number): PageRow {
  const { lastOutcome, heartbeat, ...rest } = row;
  const outcome = lastOutcome ? (({ agoMs: _ago, ...kept }) => kept)(lastOutcome) : null;
  return { ...rest, lastOutcome: outcome, heartbeat: heartbeat ? { atMs: nowMs - heartbeat.agoMs, intervalMs: heartbeat.intervalMs } : null, labels: labels ?? {} };
}

/**
 * What makes a row different for the page: everything but the problems' words, which name ages
 * (`silent: no heartbeat for 4m`) and would make every silent row new every second.
 */
export function rowKey(row: PageRow): string {
  const { problems: _problems, ...rest } = row;
  return JSON.stringify(rest);
}
