import { describe, expect, it } from 'vitest';
import { fleetHealthy, fleetRows, type HeartbeatSeen, type ReportSeen } from '../../src/control/fleet/fleet.js';

const now = Date.parse('2026-12-01T12:00:00Z');
const mark = (sequence: number) => ({ epoch: 2, sequence, digest: `sha256:${sequence}` });
const report = (node: string, outcome: 'converged' | 'failed' | 'refused', sequence = 1): ReportSeen => ({
  node,
  storedAtMs: now - 60_000,
  report: { sequence: 7, trigger: 'delivery', mode: 'converged', outcome, declaration: mark(sequence), finishedAt: new Date(now - 60_000).toISOString(), ...(outcome === 'converged' ? {} : { error: { resource: 'web', message: 'web.service is not running' } }) },
});
const beat = (node: string, agoMs: number, applied = 1): HeartbeatSeen => ({ node, storedAtMs: now - agoMs, beat: { reportSequence: 7, lastApplied: mark(applied), intervalMs: 10_000 } });

describe('the fleet rows (pure)', () => {
  it('silent after three of its own intervals; behind against its key; failed and refused both fail; order worst first', () => {
    const rows = fleetRows({
      nowMs: now,
      reports: [report('a', 'converged'), report('b', 'failed'), report('c', 'converged'), report('d', 'converged'), report('e', 'refused'), report('f', 'converged')],
      heartbeats: [beat('a', 29_000), beat('b', 1000), beat('c', 31_000), beat('d', 1000, 1), beat('e', 1000), beat('f', 1000, 3)],
      keys: [{ node: 'a', newest: mark(1) }, { node: 'd', newest: mark(2) }, { node: 'f', newest: mark(2) }, { node: 'g', newest: mark(1) }],
    });
    // g has a key but was never heard from (no report, no heartbeat): waiting for its first word, not silent.
    expect(rows.map((r) => [r.node, r.state])).toEqual([['b', 'failed'], ['e', 'failed'], ['c', 'silent'], ['d', 'behind'], ['g', 'waiting'], ['a', 'converged'], ['f', 'converged']]);
    expect(rows[0]!.problems).toEqual(['failed: web: web.service is not running']);
    expect(rows[0]!.lastOutcome).toMatchObject({ resource: 'web', agoMs: 60_000 });
    expect(rows.find((r) => r.node === 'g')!.problems).toEqual(['behind: the mesh said epoch 2, sequence 1, it applied nothing yet', 'no report yet: never heard from (not enrolled yet, or never connected)']);
    // A node that applied something newer than its key holds (the key was rolled back and refused) is not behind.
    expect(rows.find((r) => r.node === 'f')!.behind).toBe(false);
    expect(fleetHealthy(rows)).toBe(false);
    expect(fleetHealthy(rows.filter((r) => r.state === 'converged' || r.state === 'behind'))).toBe(true);
    expect(fleetHealthy(rows.filter((r) => r.state === 'silent'))).toBe(false);
  });

  it('paused is a state of its own, after failed and silent, before behind; it says who, since when, until when and why, and does not fail the check', () => {
    const paused = { reason: 'replacing a disk', by: 'alice', since: '2026-12-01T11:00:00.000Z', until: '2026-12-01T13:00:00.000Z' };
    const pausedBeat = (node: string, agoMs: number, pause: typeof paused): HeartbeatSeen => ({ ...beat(node, agoMs), beat: { ...beat(node, agoMs).beat, paused: pause } });
    const rows = fleetRows({
      nowMs: now,
      reports: ['p', 'q', 'r', 's', 'b'].map((n) => report(n, n === 'q' ? 'failed' : 'converged')),
      heartbeats: [pausedBeat('p', 1000, paused), pausedBeat('q', 1000, paused), pausedBeat('r', 31_000, paused), pausedBeat('s', 1000, { ...paused, until: '2026-12-01T11:30:00.000Z' }), beat('b', 1000)],
      keys: [{ node: 'p', newest: mark(2) }, { node: 'b', newest: mark(2) }],
    });
    // p is behind its key too, but stands aside on purpose; s's pause ended by itself; r is silent, q failed, whatever their pause.
    expect(rows.map((r) => [r.node, r.state])).toEqual([['q', 'failed'], ['r', 'silent'], ['p', 'paused'], ['b', 'behind'], ['s', 'converged']]);
    const p = rows.find((r) => r.node === 'p')!;
    expect(p.paused).toEqual(paused);
    expect(p.problems).toEqual(['paused by alice since 2026-12-01T11:00:00.000Z until 2026-12-01T13:00:00.000Z: replacing a disk', 'behind: the mesh said epoch 2, sequence 2, it applied epoch 2, sequence 1']);
    expect(rows.find((r) => r.node === 's')!.paused).toBeNull();
    expect(fleetHealthy([p])).toBe(true);
  });

  it('a converged report that held a restart off for its lock says what still waits and until when, and stays converged', () => {
    const held = { state: 'held', path: '/run/app/busy.lock', pid: 4242, since: '2026-12-01T11:58:00.000Z', waitingSince: '2026-12-01T11:59:00.000Z', until: '2026-12-01T12:09:00.000Z' };
    const steps = [{ resource: 'conf', status: 'done' }, { resource: 'app', status: 'deferred', lock: held }];
    const deferring: ReportSeen = { ...report('a', 'converged'), report: { ...report('a', 'converged').report!, steps } };
    // A host older than the bound's field: the default ten minutes from when it first held the step off.
    const older: ReportSeen = { ...report('b', 'converged'), report: { ...report('b', 'converged').report!, steps: [{ ...steps[1], lock: { ...held, until: undefined } }] } };
    const rows = fleetRows({ nowMs: now, reports: [deferring, older], heartbeats: [beat('a', 1000), beat('b', 1000)], keys: [] });
    expect(rows[0]).toMatchObject({ node: 'a', state: 'converged', problems: ['app deferred: locked by PID 4242 since 2026-12-01T11:58:00.000Z, at most until 2026-12-01T12:09:00.000Z'] });
    expect(rows[1]!.problems).toEqual(['app deferred: locked by PID 4242 since 2026-12-01T11:58:00.000Z, at most until 2026-12-01T12:09:00.000Z']);
    expect(fleetHealthy(rows)).toBe(true);
  });

  it('a report whose signature fails is flagged and fails the node', () => {
    const rows = fleetRows({ nowMs: now, reports: [{ ...report('a', 'converged'), signature: { verdict: 'failed', reason: 'not signed by the node key' } }], heartbeats: [beat('a', 0)], keys: [] });
    expect(rows[0]).toMatchObject({ state: 'failed', signature: 'failed', problems: ["its last report's signature does not verify: not signed by the node key"] });
  });

  it('a heartbeat sent before the newest report does not hide it: what the report applied counts, and its sequence', () => {
    // The beat came at start (report 1, declaration 1); deliveries 2 and 3 were reported after it.
    const early: HeartbeatSeen = { node: 'a', storedAtMs: now - 25_000, beat: { reportSequence: 1, lastApplied: mark(1), intervalMs: 30_000 } };
    const newer: ReportSeen = { ...report('a', 'converged', 3), report: { ...report('a', 'converged', 3).report!, sequence: 3 } };
    const [row] = fleetRows({ nowMs: now, reports: [newer], heartbeats: [early], keys: [{ node: 'a', newest: mark(3) }] });
    expect(row).toMatchObject({ state: 'converged', behind: false, lastApplied: mark(3), reportSequence: 3 });
    // A beat that knows of the newest report is still the fresher word.
    const [later] = fleetRows({ nowMs: now, reports: [newer], heartbeats: [{ ...early, beat: { reportSequence: 3, lastApplied: mark(4), intervalMs: 30_000 } }], keys: [{ node: 'a', newest: mark(4) }] });
    expect(later).toMatchObject({ state: 'converged', lastApplied: mark(4), reportSequence: 3 });
  });

  it('an enrolled node never heard from is listed, waiting; it is no heartbeat it missed', () => {
    const [row] = fleetRows({ nowMs: now, reports: [], heartbeats: [], keys: [], enrolled: ['db-9'] });
    expect(row).toMatchObject({ node: 'db-9', state: 'waiting', silent: false, lastApplied: null, reportSequence: null });
    expect(fleetHealthy([row!])).toBe(false);
  });

  it('after a refusal, the beat that knew every report before it still says what the node applied (a refusal changes nothing)', () => {
    const refusedReport = { ...report('a', 'refused', 5), report: { ...report('a', 'refused', 5).report!, sequence: 8, declaration: mark(5) } };
    const beat: HeartbeatSeen = { node: 'a', storedAtMs: now - 5_000, beat: { reportSequence: 7, lastApplied: mark(4), intervalMs: 30_000 } };
    const [row] = fleetRows({ nowMs: now, reports: [refusedReport], heartbeats: [beat], keys: [{ node: 'a', newest: mark(5) }] });
    expect(row).toMatchObject({ state: 'failed', lastApplied: mark(4), reportSequence: 8 });
    expect(row!.problems).toContain('behind: the mesh said epoch 2, sequence 5, it applied epoch 2, sequence 4');
    // A beat older than the report before the refusal does not know what that report applied: not taken.
    const [stale] = fleetRows({ nowMs: now, reports: [refusedReport], heartbeats: [{ ...beat, beat: { ...beat.beat!, reportSequence: 6 } }], keys: [{ node: 'a', newest: mark(5) }] });
    expect(stale!.lastApplied).toBeNull();
  });
});
