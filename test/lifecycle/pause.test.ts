import { afterEach, describe, expect, it } from 'vitest';
import { Harness, pauseOrder } from './harness.js';
import { servingHosts, step } from './serving.js';

const harnesses: Harness[] = [];
afterEach(() => harnesses.splice(0).forEach((h) => h.cleanup()));
const serving = servingHosts();

const applying = (h: Harness) => h.apply?.input;

describe('a host paused by hand', () => {
  it('keeps the deliveries that arrive while paused, the newest winning, and applies the newest at once on resume', async () => {
    const h = await serving();
    await step(h, () => h.pause());
    await step(h, () => h.deliver(1));
    await step(h, () => h.deliver(2));
    expect(applying(h)).toBeUndefined();
    expect(h.kept?.sequence).toBe(2);
    expect(h.snapshot().context.pending).toMatchObject({ kind: 'delivery', delivery: { sequence: 2 } });
    await step(h, () => h.unpause());
    expect(applying(h)).toMatchObject({ kind: 'delivery', delivery: { sequence: 2 } });
    await step(h, () => h.finishApply());
    expect(h.appliedSequences).toEqual([2]);
  });

  it('takes effect after the apply running when it is asked, never in its middle', async () => {
    const h = await serving();
    await step(h, () => h.deliver(1));
    await step(h, () => h.pause());
    // The apply goes on: the pause is not an ending, nothing is drained or cancelled.
    expect(h.snapshot().matches({ serving: { worker: { applying: 'running' } } })).toBe(true);
    await step(h, () => h.deliver(2));
    await step(h, () => h.finishApply());
    expect(h.appliedSequences).toEqual([1]);
    expect(applying(h)).toBeUndefined();
    expect(h.snapshot().context.pending).toMatchObject({ kind: 'delivery', delivery: { sequence: 2 } });
    await step(h, () => h.unpause());
    await step(h, () => h.finishApply());
    expect(h.appliedSequences).toEqual([1, 2]);
  });

  it('skips the timer\'s reconciles; what the watchers find waits, and is repaired at the resume', async () => {
    const h = await serving();
    await step(h, () => h.pause());
    await step(h, () => h.actor.send({ type: 'RECONCILE_TICK' }));
    expect(h.snapshot().context.pending).toBeUndefined();
    await step(h, () => h.actor.send({ type: 'DRIFT_FOUND', found: ['drift: /etc/x content changed'] }));
    expect(applying(h)).toBeUndefined();
    await step(h, () => h.unpause());
    expect(applying(h)).toEqual({ kind: 'reconcile', found: ['drift: /etc/x content changed'] });
  });

  it('reports refusals while paused: only applies wait', async () => {
    const h = await serving();
    await step(h, () => h.pause());
    await step(h, () => h.actor.send({ type: 'REFUSED', refused: { kind: 'forged', message: 'the signature does not verify' } }));
    expect(applying(h)).toMatchObject({ kind: 'refusals' });
  });

  it('ends by itself when its time is up (the clock passed in), and applies what waited', async () => {
    const h = await serving();
    await step(h, () => h.pause(60_000));
    await step(h, () => h.deliver(1));
    await step(h, () => h.clock.increment(59_999));
    expect(applying(h)).toBeUndefined();
    await step(h, () => h.clock.increment(1));
    expect(h.snapshot().matches({ serving: { pause: 'unpaused' } })).toBe(true);
    expect(applying(h)).toMatchObject({ kind: 'delivery', delivery: { sequence: 1 } });
  });

  it('holds across a restart: a store that keeps the pause starts paused', async () => {
    const h = await serving({ paused: pauseOrder() });
    expect(h.snapshot().matches({ serving: { pause: 'paused' } })).toBe(true);
    await step(h, () => h.deliver(1));
    expect(applying(h)).toBeUndefined();
  });

  it('a worker that finds the store paused under the lock gives its work back, and the newer delivery that came meanwhile wins', async () => {
    const h = await serving();
    await step(h, () => h.deliver(1));
    await step(h, () => h.deliver(2));
    await step(h, () => h.findPause());
    expect(h.appliedSequences).toEqual([]);
    expect(h.snapshot().matches({ serving: { pause: 'paused' } })).toBe(true);
    expect(h.snapshot().context.pending).toMatchObject({ kind: 'delivery', delivery: { sequence: 2 } });
    await step(h, () => h.unpause());
    await step(h, () => h.finishApply());
    expect(h.appliedSequences).toEqual([2]);
  });

  it('the invariants catch a machine that applies while paused', async () => {
    const h = new Harness({ guards: { hasWork: ({ context }) => context.pending !== undefined || context.refused.length > 0 } });
    harnesses.push(h);
    h.start();
    await h.settle();
    h.loadStore!.resolve({ enrolled: true, mode: 'adopted' });
    await h.settle();
    h.pause();
    h.deliver(1);
    await h.settle();
    expect(h.check()).toEqual(['an apply (delivery) was taken while the host is paused']);
  });
});
