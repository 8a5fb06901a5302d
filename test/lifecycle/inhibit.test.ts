import { describe, expect, it } from 'vitest';
import type { DeferredLock } from '../../machines/lifecycle.js';
import type { Harness } from './harness.js';
import { servingHosts, step } from './serving.js';

const LOCKED: DeferredLock[] = [{ resource: 'app', lock: '/run/app/busy.lock', endsInMs: 600_000 }];
const serving = servingHosts();

const applying = (h: Harness) => h.apply?.input;

describe('a step held off for a lock, in the lifecycle', () => {
  it('an apply that held a restart off has its lock watched; the lock let go asks for one reconcile that says so', async () => {
    const h = await serving();
    await step(h, () => h.deliver(1));
    await step(h, () => h.finishApply({ deferred: LOCKED }));
    expect(h.snapshot().matches({ serving: { deferral: 'waiting' } })).toBe(true);
    expect(h.watching).toBe(1);
    expect(applying(h)).toBeUndefined();
    await step(h, () => h.lockReleased());
    expect(h.watching).toBe(0);
    expect(applying(h)).toEqual({ kind: 'reconcile', found: [expect.stringMatching(/^lock: \/run\/app\/busy\.lock of app was released \(its file is gone\)/)] });
    await step(h, () => h.finishApply({ deferred: [] }));
    expect(h.snapshot().matches({ serving: { deferral: 'none' } })).toBe(true);
  });

  it('its bound running out asks for the apply that does it anyway, on the clock passed in', async () => {
    const h = await serving();
    await step(h, () => h.deliver(1));
    await step(h, () => h.finishApply({ deferred: [{ ...LOCKED[0]!, endsInMs: 30_000 }] }));
    await step(h, () => h.clock.increment(29_999));
    expect(applying(h)).toBeUndefined();
    h.noteReleased();
    await step(h, () => h.clock.increment(1));
    expect(applying(h)).toEqual({ kind: 'reconcile', found: [expect.stringMatching(/reached its inhibitMaxMs/)] });
  });

  it('is watched from the start when the store keeps it (a restart of the host loses nothing)', async () => {
    const h = await serving({ deferred: LOCKED });
    expect(h.watching).toBe(1);
    await step(h, () => h.lockReleased());
    expect(applying(h)).toMatchObject({ kind: 'reconcile' });
  });

  it('a newer delivery while it waits is applied at once, and that apply decides what still waits', async () => {
    const h = await serving();
    await step(h, () => h.deliver(1));
    await step(h, () => h.finishApply({ deferred: LOCKED }));
    await step(h, () => h.deliver(2));
    expect(applying(h)).toMatchObject({ kind: 'delivery', delivery: { sequence: 2 } });
    // Still watched while the newer declaration is applied.
    expect(h.watching).toBe(1);
    await step(h, () => h.finishApply({ deferred: [] }));
    expect(h.watching).toBe(0);
    expect(h.appliedSequences).toEqual([1, 2]);
  });

  it('a lock let go while a delivery waits leaves the delivery to do it', async () => {
    const h = await serving();
    await step(h, () => h.deliver(1));
    await step(h, () => h.finishApply({ deferred: LOCKED }));
    await step(h, () => h.pause());
    await step(h, () => h.deliver(2));
    await step(h, () => h.lockReleased());
    expect(h.snapshot().context.pending).toMatchObject({ kind: 'delivery', delivery: { sequence: 2 } });
    await step(h, () => h.unpause());
    expect(applying(h)).toMatchObject({ kind: 'delivery', delivery: { sequence: 2 } });
  });

  it('a lock let go while paused waits for the resume, then is applied', async () => {
    const h = await serving({ deferred: LOCKED });
    await step(h, () => h.pause());
    await step(h, () => h.lockReleased());
    expect(applying(h)).toBeUndefined();
    await step(h, () => h.unpause());
    expect(applying(h)).toMatchObject({ kind: 'reconcile' });
  });

  it('the invariants catch a machine that forgets what a released lock held off', async () => {
    const h = await serving({ deferred: LOCKED }, { actions: { applyDeferred: () => {} } });
    h.lockReleased();
    await h.settle();
    expect(h.check()).toContain('idle, though a lock was let go (or its bound ran out) and what it held off was never applied');
  });
});
