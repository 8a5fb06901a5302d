import { describe, expect, it } from 'vitest';
import { fleetHealthy, fleetRows } from '../../src/control/fleet/fleet.js';
import { formatFleet } from '../../src/control/fleet/fleet-format.js';

const nowMs = Date.parse('2026-12-07T05:00:00.000Z');
const report = (node: string, outcome: 'converged' | 'failed') => ({
  node,
  storedAtMs: nowMs - 3_600_000,
  report: { sequence: 4, trigger: 'reconcile' as const, mode: 'converged' as const, outcome, finishedAt: new Date(nowMs - 3_600_000).toISOString(), declaration: null },
});

describe('a node taken out of the mesh, in the fleet view', () => {
  it('shows as removed with when, last in the view, whatever its last report and silence said, and does not fail the check', () => {
    const rows = fleetRows({
      reports: [report('gone', 'failed'), report('web-1', 'converged')],
      heartbeats: [{ node: 'web-1', storedAtMs: nowMs - 1000, beat: { intervalMs: 30_000 } }],
      keys: [],
      removed: [{ node: 'gone', at: '2026-12-07T04:00:00.000Z' }],
      nowMs,
    });
    expect(rows.map((r) => [r.node, r.state])).toEqual([['web-1', 'converged'], ['gone', 'removed']]);
    expect(rows[1]).toMatchObject({ removedAt: '2026-12-07T04:00:00.000Z', silent: false, problems: ['removed from the mesh at 2026-12-07T04:00:00.000Z: its credentials are revoked'] });
    expect(fleetHealthy(rows)).toBe(true);
    expect(formatFleet(rows)).toMatch(/^2 nodes: 1 converged, 1 removed$/m);
  });

  it('a removed node with nothing left in the streams is still listed', () => {
    const rows = fleetRows({ reports: [], heartbeats: [], keys: [], removed: [{ node: 'gone', at: '2026-12-07T04:00:00.000Z' }], nowMs });
    expect(rows.map((r) => r.state)).toEqual(['removed']);
  });

  it('without the removal the same node is failed: the state comes from the record, not from its silence', () => {
    const rows = fleetRows({ reports: [report('gone', 'failed')], heartbeats: [], keys: [], nowMs });
    expect(rows[0]!.state).toBe('failed');
  });
});
