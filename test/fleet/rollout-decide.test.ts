import { describe, expect, it } from 'vitest';
import { decide, judge, orderNodes, parseWaves, resumeNodes, splitWaves, type NodeProgress, type Rollout } from '../../src/control/fleet/rollout.js';

const fleet = (n: number) => Array.from({ length: n }, (_, i) => `host-${String(i + 1).padStart(2, '0')}`);

function rollout(nodes: string[], waves: string, progress: Record<string, NodeProgress> = {}): Rollout {
  const split = splitWaves(orderNodes(nodes), parseWaves(waves) as never, waves) as string[][];
  return {
    version: 1,
    id: 'r-1',
    file: 'app.json',
    digest: 'sha256:x',
    declaration: {},
    waves: split,
    wave: 0,
    waitMs: 10_000,
    haltOn: ['failed', 'refused', 'silent'],
    status: 'running',
    nodes: Object.fromEntries(nodes.map((n) => [n, progress[n] ?? { phase: 'pending' }])),
    createdAt: '',
    updatedAt: '',
  };
}

describe('a rollout\'s decisions, pure', () => {
  it('orders nodes by the hash of their id: the same fleet, listed in any order, gets the same waves', () => {
    const nodes = fleet(20);
    expect(orderNodes([...nodes].reverse())).toEqual(orderNodes(nodes));
    expect(orderNodes(nodes)).not.toEqual(nodes);
    expect(splitWaves(orderNodes(nodes), parseWaves('1,10%,50%,100%') as never, '')).toEqual(splitWaves(orderNodes([...nodes].sort(() => 0.5 - Math.random())), parseWaves('1,10%,50%,100%') as never, ''));
  });

  it('splits waves by how many nodes have been reached after each: 1,10%,50%,100% over 20 is 1, 1, 8, 10; a size that reaches no new node adds no wave', () => {
    const ordered = orderNodes(fleet(20));
    expect((splitWaves(ordered, parseWaves('1,10%,50%,100%') as never, '') as string[][]).map((w) => w.length)).toEqual([1, 1, 8, 10]);
    expect((splitWaves(orderNodes(fleet(3)), parseWaves('1,10%,50%,100%') as never, '') as string[][]).map((w) => w.length)).toEqual([1, 1, 1]);
  });

  it('refuses waves that shrink, do not reach every node, or are neither counts nor shares', () => {
    expect(parseWaves('1,x%')).toMatch(/'x%' is neither a count of nodes/);
    expect(parseWaves('0,100%')).toMatch(/'0' must be a whole count of at least 1/);
    expect(parseWaves('150%')).toMatch(/at most 100%/);
    expect(splitWaves(orderNodes(fleet(20)), parseWaves('50%,5,100%') as never, '50%,5,100%')).toMatch(/must not shrink/);
    expect(splitWaves(orderNodes(fleet(20)), parseWaves('1,50%') as never, '1,50%')).toMatch(/the last wave reaches 10 of the 20 nodes; end with 100%/);
  });

  it('sends the wave, waits for its reports, goes to the next wave, and is done after the last', () => {
    const r = rollout(fleet(4), '1,100%');
    const first = r.waves[0]![0]!;
    expect(decide(r)).toEqual({ kind: 'send', nodes: [first] });
    r.nodes[first] = { phase: 'sent', mark: { sequence: 2 }, waitFromMs: 1000 };
    expect(decide(r)).toMatchObject({ kind: 'wait', nodes: [first], deadlineMs: 11_000 });
    r.nodes[first] = judge(r.nodes[first]!, { report: { sequence: 7, declaration: { sequence: 2 }, outcome: 'converged' } }, 2000, r.waitMs);
    expect(r.nodes[first]).toMatchObject({ phase: 'converged', report: 7 });
    expect(decide(r)).toEqual({ kind: 'advance', wave: 1 });
    r.wave = 1;
    for (const n of r.waves[1]!) r.nodes[n] = { phase: 'converged' };
    expect(decide(r)).toEqual({ kind: 'done' });
  });

  it('halts on the first node of the wave that failed, naming its resource and error; a report of an older copy settles nothing', () => {
    const r = rollout(fleet(3), '100%');
    const [a, b] = r.waves[0]! as [string, string];
    const sent: NodeProgress = { phase: 'sent', mark: { epoch: 1, sequence: 4 }, waitFromMs: 0 };
    expect(judge(sent, { report: { sequence: 3, declaration: { epoch: 1, sequence: 3 }, outcome: 'failed', error: { message: 'old' } } }, 10, 10_000).phase).toBe('sent');
    r.nodes[a] = { phase: 'converged' };
    r.nodes[b] = judge(sent, { report: { sequence: 9, declaration: { epoch: 1, sequence: 4 }, outcome: 'failed', error: { resource: 'file app', message: 'EACCES' } } }, 10, 10_000);
    expect(decide(r)).toEqual({ kind: 'halt', node: b, phase: 'failed' });
    expect(r.nodes[b]).toMatchObject({ resource: 'file app', error: 'EACCES' });
  });

  it('a refusal naming no declaration counts only when it came after the send; a node with no report within the wait is silent', () => {
    const sent: NodeProgress = { phase: 'sent', mark: { sequence: 4 }, waitFromMs: 0, reportBefore: 5 };
    expect(judge(sent, { report: { sequence: 5, declaration: null, outcome: 'refused', error: { message: 'bad signature' } } }, 10, 10_000).phase).toBe('sent');
    expect(judge(sent, { report: { sequence: 6, declaration: null, outcome: 'refused', error: { message: 'bad signature' } } }, 10, 10_000).phase).toBe('refused');
    expect(judge(sent, {}, 9_999, 10_000).phase).toBe('sent');
    expect(judge(sent, {}, 10_000, 10_000)).toMatchObject({ phase: 'silent', error: 'no report of sequence 4 within 10s' });
  });

  it('a paused node is waited for, not failed: its clock stops while paused and starts again when it is seen unpaused; with --halt-on failed a silent node does not halt', () => {
    const pause = { reason: 'disk swap', by: 'alice', since: '2026-12-03T09:00:00Z' };
    const sent: NodeProgress = { phase: 'sent', mark: { sequence: 4 }, waitFromMs: 0 };
    const paused = judge(sent, { paused: pause }, 50_000, 10_000);
    expect(paused).toMatchObject({ phase: 'sent', paused: pause, waitFromMs: 50_000 });
    const r = rollout(['a'], '100%', { a: paused });
    expect(decide(r)).toMatchObject({ kind: 'wait', paused: ['a'], deadlineMs: Infinity });
    const back = judge(paused, { paused: null }, 55_000, 10_000);
    expect(back.paused).toBeUndefined();
    expect(judge(back, { paused: null }, 59_999, 10_000).phase).toBe('sent');
    const quiet = rollout(['a'], '100%', { a: { phase: 'silent' } });
    expect(decide({ ...quiet, haltOn: ['failed'] })).toEqual({ kind: 'done' });
  });

  it('a report of the copy that converged but held a restart off for a lock is waited on, from the lock\'s bound; the report after the restart settles it, and a restart that fails then halts', () => {
    const until = '2026-12-03T09:10:00.000Z';
    const held = { resource: 'app', pid: 4242, since: '2026-12-03T09:00:00.000Z', until };
    const sent: NodeProgress = { phase: 'sent', mark: { sequence: 4 }, waitFromMs: 0 };
    const deferred = judge(sent, { report: { sequence: 8, declaration: { sequence: 4 }, outcome: 'converged', deferred: [held] } }, 5_000, 10_000);
    expect(deferred).toMatchObject({ phase: 'sent', deferred: [held], waitFromMs: Date.parse(until) });
    // Heard again and again (the same report), the wait does not move; past the bound and the wait it is silent.
    const again = judge(deferred, { report: { sequence: 8, declaration: { sequence: 4 }, outcome: 'converged', deferred: [held] } }, Date.parse(until) + 9_999, 10_000);
    expect(again).toMatchObject({ phase: 'sent', waitFromMs: Date.parse(until) });
    expect(judge(again, {}, Date.parse(until) + 10_000, 10_000).phase).toBe('silent');
    expect(decide(rollout(['a'], '100%', { a: deferred }))).toMatchObject({ kind: 'wait', nodes: ['a'], deadlineMs: Date.parse(until) + 10_000 });
    const restarted = judge(deferred, { report: { sequence: 9, declaration: { sequence: 4 }, outcome: 'converged' } }, 6_000, 10_000);
    expect(restarted).toMatchObject({ phase: 'converged', report: 9 });
    expect(restarted.deferred).toBeUndefined();
    const broken = judge(deferred, { report: { sequence: 9, declaration: { sequence: 4 }, outcome: 'failed', error: { resource: 'app', message: 'app.service failed to start' } } }, 6_000, 10_000);
    expect(broken).toMatchObject({ phase: 'failed', resource: 'app' });
    expect(decide(rollout(['a'], '100%', { a: broken }))).toEqual({ kind: 'halt', node: 'a', phase: 'failed' });
  });

  it('resumed: a failed node is sent again unless a newer report of its copy converged; a silent one is awaited anew; converged ones are left', () => {
    const r = rollout(['a', 'b', 'c', 'd'], '100%', {
      a: { phase: 'converged', mark: { sequence: 2 }, report: 3 },
      b: { phase: 'failed', mark: { sequence: 2 }, report: 4, error: 'x' },
      c: { phase: 'failed', mark: { sequence: 2 }, report: 4, error: 'x' },
      d: { phase: 'silent', mark: { sequence: 2 }, waitFromMs: 0, error: 'no report' },
    });
    const latest = new Map([
      ['b', { sequence: 4, declaration: { sequence: 2 }, outcome: 'failed' as const }],
      ['c', { sequence: 5, declaration: { sequence: 2 }, outcome: 'converged' as const }],
    ]);
    const nodes = resumeNodes(r, latest, 100);
    expect(nodes.a).toEqual(r.nodes.a);
    expect(nodes.b).toEqual({ phase: 'pending', again: true, mark: { sequence: 2 } });
    expect(nodes.c).toMatchObject({ phase: 'converged', report: 5 });
    expect(nodes.d).toEqual({ phase: 'sent', mark: { sequence: 2 }, waitFromMs: 100 });
  });
});
