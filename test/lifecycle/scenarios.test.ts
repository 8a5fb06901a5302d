import { afterEach, describe, expect, it } from 'vitest';
import { assign } from 'xstate';
import { APPLY_GRACE_MS } from '../../machines/lifecycle.js';
import { Harness } from './harness.js';

const harnesses: Harness[] = [];
afterEach(() => harnesses.splice(0).forEach((h) => h.cleanup()));

/** A host serving, enrolled, adopted. */
async function serving(options?: ConstructorParameters<typeof Harness>[0]): Promise<Harness> {
  const h = new Harness(options);
  harnesses.push(h);
  h.start();
  await h.settle();
  h.loadStore!.resolve({ enrolled: true, mode: 'adopted', outbox: [] });
  await h.settle();
  expect(h.snapshot().matches('serving')).toBe(true);
  return h;
}

const applying = (h: Harness) => h.apply?.input;
async function step(h: Harness, fn: () => void) {
  fn();
  await h.settle();
  expect(h.check()).toEqual([]);
}

// The interleavings behind the old faults (two applies at once, a reconcile over a newer delivery, a lost delivery): both paths only enqueue, one worker applies.
describe('named interleavings', () => {
  it('a tick while a delivery applies: the reconcile follows it, applying the kept declaration', async () => {
    const h = await serving();
    await step(h, () => h.deliver(1));
    expect(applying(h)).toEqual({ kind: 'delivery', delivery: { sequence: 1, digest: 'sha256:1' } });
    await step(h, () => h.actor.send({ type: 'RECONCILE_TICK' }));
    expect(h.snapshot().context.pending).toEqual({ kind: 'reconcile' });
    await step(h, () => h.finishApply());
    expect(applying(h)).toEqual({ kind: 'reconcile' });
    await step(h, () => h.finishApply());
    expect(h.applied).toEqual([1, 1]);
  });

  it('a delivery while a reconcile applies: the delivery is applied next', async () => {
    const h = await serving();
    await step(h, () => h.actor.send({ type: 'RECONCILE_TICK' }));
    expect(applying(h)).toEqual({ kind: 'reconcile' });
    await step(h, () => h.deliver(5));
    await step(h, () => h.finishApply({ silent: true }));
    expect(applying(h)).toMatchObject({ kind: 'delivery', delivery: { sequence: 5 } });
    await step(h, () => h.finishApply());
    expect(h.applied).toEqual([5]);
  });

  it('two deliveries during one apply: only the newest is applied after it', async () => {
    const h = await serving();
    await step(h, () => h.deliver(1));
    await step(h, () => h.deliver(2));
    await step(h, () => h.deliver(3));
    // A tick now must not displace the pending delivery.
    await step(h, () => h.actor.send({ type: 'RECONCILE_TICK' }));
    expect(h.snapshot().context.pending).toMatchObject({ kind: 'delivery', delivery: { sequence: 3 } });
    await step(h, () => h.finishApply());
    await step(h, () => h.finishApply());
    expect(h.applied).toEqual([1, 3]);
    expect(h.snapshot().context.pending).toBeUndefined();
  });

  it('the reconcile reads the kept declaration when it starts, not when it was asked (the link\'s apply in flight)', async () => {
    const h = await serving();
    await step(h, () => h.deliver(1));
    await step(h, () => h.finishApply());
    await step(h, () => h.deliver(2));
    await step(h, () => h.actor.send({ type: 'RECONCILE_TICK' }));
    await step(h, () => h.finishApply());
    await step(h, () => h.finishApply());
    // The old fault applied 1 again here, over 2.
    expect(h.applied).toEqual([1, 2, 2]);
  });

  it('a stop during an apply waits for it, never cancels it, then quiesces and stops', async () => {
    const h = await serving();
    await step(h, () => h.deliver(1));
    await step(h, () => h.actor.send({ type: 'STOP' }));
    expect(h.snapshot().matches({ serving: { worker: { applying: 'draining' } } })).toBe(true);
    expect(h.quiesce).toBeUndefined();
    await step(h, () => h.finishApply());
    expect(h.quiesce?.input).toEqual({ ending: 'stop' });
    await step(h, () => h.resolveQuiesce());
    expect(h.snapshot().status).toBe('done');
    expect(h.snapshot().output).toEqual({ ending: 'stop' });
    expect(h.applied).toEqual([1]);
    expect(h.reportsMade).toEqual([1]);
  });

  it('a stop whose apply outlasts 60 s: quiesced at 60 s; the late apply cannot save', async () => {
    const h = await serving();
    await step(h, () => h.deliver(1));
    await step(h, () => h.actor.send({ type: 'STAND_ASIDE' }));
    await step(h, () => h.clock.increment(APPLY_GRACE_MS - 1));
    expect(h.quiesce).toBeUndefined();
    await step(h, () => h.clock.increment(1));
    // Standing aside with an apply still running would let the next one overlap it: the host stops.
    expect(h.quiesce?.input).toEqual({ ending: 'stop' });
    await step(h, () => h.resolveQuiesce());
    expect(h.snapshot().output).toEqual({ ending: 'stop', abandoned: true });
    await step(h, () => h.finishApply());
    expect(h.reportsMade).toEqual([]);
    expect(h.check()).toEqual([]);
  });

  it('a stand-aside between applies releases and can resume, re-reading the store', async () => {
    const h = await serving();
    await step(h, () => h.actor.send({ type: 'STAND_ASIDE' }));
    expect(h.quiesce?.input).toEqual({ ending: 'standAside' });
    await step(h, () => h.resolveQuiesce());
    expect(h.snapshot().value).toBe('standingAside');
    await step(h, () => h.actor.send({ type: 'RESUME' }));
    expect(h.snapshot().value).toBe('starting');
    expect(h.loadStore).toBeDefined();
  });

  it('reports leave in the order made, one at a time, retried until acknowledged', async () => {
    const h = await serving();
    await step(h, () => h.deliver(1));
    await step(h, () => h.finishApply());
    await step(h, () => h.deliver(2));
    await step(h, () => h.finishApply());
    expect(h.sender?.input).toEqual({ sequence: 1 });
    await step(h, () => h.sender!.reject(new Error('no ack')));
    await step(h, () => h.clock.increment(1000));
    expect(h.sender?.input).toEqual({ sequence: 1 });
    await step(h, () => h.resolveSender());
    expect(h.sender?.input).toEqual({ sequence: 2 });
    await step(h, () => h.resolveSender());
    expect(h.reportsSent).toEqual([1, 2]);
  });
});

describe('the invariants are written apart from the machine', () => {
  it('catch a machine that sends a report twice', async () => {
    const h = await serving({ actions: { sent: assign({ outbox: ({ context }) => context.outbox }) } });
    h.deliver(1);
    await h.settle();
    h.finishApply();
    await h.settle();
    h.resolveSender();
    await h.settle();
    h.resolveSender();
    await h.settle();
    expect(h.check()).toContainEqual(expect.stringMatching(/reports left out of order: 1,1/));
  });

  it('catch a machine that lets an older delivery replace a newer pending one', async () => {
    const h = await serving({ actions: { enqueueDelivery: assign({ pending: ({ event }) => (event.type === 'DELIVERY' ? { kind: 'delivery' as const, delivery: event.delivery } : undefined) }) } });
    h.deliver(1);
    await h.settle();
    h.deliver(3);
    await h.settle();
    // An older one arriving late (a slow watch): the machine must keep 3.
    h.actor.send({ type: 'DELIVERY', delivery: { sequence: 2, digest: 'sha256:2' } });
    await h.settle();
    h.finishApply();
    await h.settle();
    h.finishApply();
    await h.settle();
    expect(h.applied).toEqual([1, 2]);
    expect(h.check().join()).toMatch(/never taken/);
  });
});
