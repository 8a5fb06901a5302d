import { afterEach, describe, expect, it } from 'vitest';
import { attachLauncher } from '../../src/host/daemon/launcher-seam.js';
import type { HostEvent, LauncherCommand, PipeEnd } from '../../src/host/release/pipe.js';
import { StorePeek } from '../../src/core/store/peek.js';
import { silentLogger } from '../../src/core/system/log.js';
import { Harness } from '../lifecycle/harness.js';

/**
 * The daemon's side of the launcher over the real lifecycle machine and a real store: what a host on
 * trial tells its launcher when the worker's work ends. The launcher fails a trial whose apply ends
 * other than converged, so refusals the worker reports (a stale or forged value of the node's key)
 * must not be said as the trial's apply, and an apply followed at once by other work is still said.
 */
const harnesses: Harness[] = [];
afterEach(() => harnesses.splice(0).forEach((h) => h.cleanup()));

function pipe(): PipeEnd<HostEvent, LauncherCommand> & { sent: HostEvent[] } {
  const sent: HostEvent[] = [];
  return { sent, send: (m) => void sent.push(m), onMessage: () => {}, onClose: () => {}, close: () => {} };
}

/** A host on trial, serving: its first apply (the trial's reconcile) in hand. */
async function onTrial() {
  const h = new Harness();
  harnesses.push(h);
  const end = pipe();
  attachLauncher(h.actor, { pipe: end, trial: '0.2.0', head: () => new StorePeek(h.dir).headNow(), node: () => 'n1', log: silentLogger(), report: async () => {} });
  h.start();
  await h.settle();
  h.loadStore!.resolve({ enrolled: true, mode: 'converged' });
  await h.settle();
  expect(h.apply?.input).toMatchObject({ kind: 'reconcile', found: ['release 0.2.0 on trial: its first apply, made at once and reported'] });
  return { h, sent: end.sent };
}

let clock = Date.parse('2026-12-03T09:00:00Z');
/** Ends the work in hand, the store saving the outcome the real worker would. */
async function finish(h: Harness, outcome: 'converged' | 'refused') {
  const reports = h.apply!.input.kind === 'refusals' ? h.apply!.input.refused.length : 1;
  h.store.updateHead((s) => (s.lastOutcome = { outcome, at: new Date((clock += 1000)).toISOString(), reportSequence: s.reportSequence + reports }));
  h.finishApply();
  await h.settle();
  expect(h.check()).toEqual([]);
}

const applied = (sent: HostEvent[]) => sent.filter((e) => e.type === 'applied');

describe('a host on trial tells its launcher of its applies, never of refusals', () => {
  it('refusals queued during the trial apply: the apply is said converged, the refusals after it are not said', async () => {
    const { h, sent } = await onTrial();
    h.deliver(7);
    await h.settle();
    h.actor.send({ type: 'REFUSED', refused: { kind: 'forged', message: 'the signature does not verify' } });
    h.deliver(3);
    await h.settle();
    expect(h.snapshot().context.refused.map((r) => r.kind)).toEqual(['forged', 'stale']);

    // The trial's apply ends; the refusals are taken at once, in the same step.
    await finish(h, 'converged');
    expect(h.apply?.input.kind).toBe('refusals');
    expect(applied(sent)).toEqual([{ type: 'applied', outcome: 'converged', report: 1 }]);

    // The refusals are reported (refused is the store's last outcome), then the delivery is applied.
    await finish(h, 'refused');
    expect(h.apply?.input).toMatchObject({ kind: 'delivery', delivery: { sequence: 7 } });
    expect(applied(sent)).toEqual([{ type: 'applied', outcome: 'converged', report: 1 }]);
    await finish(h, 'converged');
    expect(applied(sent)).toEqual([
      { type: 'applied', outcome: 'converged', report: 1 },
      { type: 'applied', outcome: 'converged', report: 4 },
    ]);
    expect(h.snapshot().matches({ serving: { worker: 'idle' } })).toBe(true);
  });

  it('a refusal reported before any apply is not said, and the next apply is said', async () => {
    const { h, sent } = await onTrial();
    await finish(h, 'converged');
    h.actor.send({ type: 'REFUSED', refused: { kind: 'wrong-node', message: 'the declaration is for another node' } });
    await h.settle();
    await finish(h, 'refused');
    h.actor.send({ type: 'RECONCILE_TICK' });
    await h.settle();
    await finish(h, 'converged');
    expect(applied(sent)).toEqual([
      { type: 'applied', outcome: 'converged', report: 1 },
      { type: 'applied', outcome: 'converged', report: 3 },
    ]);
  });
});
