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
  h.loadStore!.resolve({ enrolled: true, mode: 'adopted' });
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
    expect(applying(h)).toMatchObject({ kind: 'delivery', delivery: { sequence: 1, digest: 'sha256:1' } });
    await step(h, () => h.actor.send({ type: 'RECONCILE_TICK' }));
    expect(h.snapshot().context.pending).toEqual({ kind: 'reconcile' });
    await step(h, () => h.finishApply());
    expect(applying(h)).toEqual({ kind: 'reconcile' });
    await step(h, () => h.finishApply());
    expect(h.appliedSequences).toEqual([1, 1]);
  });

  it("a watcher's finding asks for a reconcile carrying it; findings gather; a pending delivery is never displaced", async () => {
    const h = await serving();
    await step(h, () => h.deliver(1));
    await step(h, () => h.actor.send({ type: 'DRIFT_FOUND', found: ['fail2ban.service was failed'] }));
    await step(h, () => h.actor.send({ type: 'DRIFT_FOUND', found: ['drift: /etc/x content changed', 'fail2ban.service was failed'] }));
    expect(h.snapshot().context.pending).toEqual({ kind: 'reconcile', found: ['fail2ban.service was failed', 'drift: /etc/x content changed'] });
    await step(h, () => h.deliver(2));
    await step(h, () => h.actor.send({ type: 'DRIFT_FOUND', found: ['drift: /etc/y removed'] }));
    expect(h.snapshot().context.pending).toMatchObject({ kind: 'delivery', delivery: { sequence: 2 } });
    await step(h, () => h.finishApply());
    await step(h, () => h.finishApply());
    expect(h.appliedSequences).toEqual([1, 2]);
  });

  it('a delivery while a reconcile applies: the delivery is applied next', async () => {
    const h = await serving();
    await step(h, () => h.actor.send({ type: 'RECONCILE_TICK' }));
    expect(applying(h)).toEqual({ kind: 'reconcile' });
    await step(h, () => h.deliver(5));
    await step(h, () => h.finishApply({ report: false }));
    expect(applying(h)).toMatchObject({ kind: 'delivery', delivery: { sequence: 5 } });
    await step(h, () => h.finishApply());
    expect(h.appliedSequences).toEqual([5]);
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
    expect(h.appliedSequences).toEqual([1, 3]);
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
    expect(h.appliedSequences).toEqual([1, 2, 2]);
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
    expect(h.appliedSequences).toEqual([1]);
    expect(h.reportsMade).toEqual([1]);
  });

  it('a refusal waiting when the host stops is reported before it quiesces, once: its report waits in the outbox for the next start', async () => {
    const h = await serving();
    await step(h, () => h.deliver(2));
    await step(h, () => h.deliver(1));
    expect(h.snapshot().context.refused).toHaveLength(1);
    await step(h, () => h.actor.send({ type: 'STOP' }));
    await step(h, () => h.finishApply());
    // The worker reports the refusal (bounded by the grace, like any work taken while ending), then the host quiesces.
    expect(h.apply?.input).toMatchObject({ kind: 'refusals', refused: [{ kind: 'stale', delivery: { sequence: 1 } }] });
    expect(h.snapshot().matches({ serving: { worker: { applying: 'draining' } } })).toBe(true);
    expect(h.quiesce).toBeUndefined();
    await step(h, () => h.finishApply());
    expect(h.quiesce?.input).toEqual({ ending: 'stop' });
    await step(h, () => h.resolveQuiesce());
    expect(h.snapshot().output).toEqual({ ending: 'stop' });
    expect(h.reportsMade).toEqual([1, 2]);
    expect(h.refusedTaken.map((d) => d.sequence)).toEqual([1]);
  });

  it('a start after an apply that failed tries it again at once, saying why; a delivery pending converges it anyway', async () => {
    const h = new Harness();
    harnesses.push(h);
    h.start();
    await h.settle();
    await step(h, () => h.loadStore!.resolve({ enrolled: true, mode: 'converged', lastFailed: { report: 1, message: 'file /srv/app/app.conf: ENOSPC' } }));
    expect(applying(h)).toEqual({ kind: 'reconcile', found: ['the last apply (report 1) failed: file /srv/app/app.conf: ENOSPC; it is tried again as the host starts'] });
    await step(h, () => h.finishApply());
    expect(h.reportsMade).toEqual([1]);
    // A start after a successful apply waits for the tick, as before.
    const quiet = await serving();
    expect(applying(quiet)).toBeUndefined();
    // A genesis this host just ran and reported failed is not tried again at once (the same fault, a second report).
    const enrolling = new Harness({ input: { bundle: 'bundle.json' } });
    harnesses.push(enrolling);
    enrolling.start();
    await enrolling.settle();
    await step(enrolling, () => enrolling.loadStore!.resolve({ enrolled: false }));
    await step(enrolling, () => enrolling.genesis!.resolve());
    await step(enrolling, () => enrolling.loadStore!.resolve({ enrolled: true, mode: 'converged', lastFailed: { report: 1 } }));
    expect(enrolling.snapshot().matches('serving')).toBe(true);
    expect(applying(enrolling)).toBeUndefined();
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

// The order rule decided in the machine: with an epoch (epoch, sequence); without one, the sequence alone.
describe.each([
  { name: 'with an epoch', newer: { epoch: 2, sequence: 5 }, older: { epoch: 1, sequence: 9 }, first: { epoch: 2, sequence: 1 } },
  { name: 'without an epoch', newer: { sequence: 5 }, older: { sequence: 4 }, first: { sequence: 1 } },
])('a delivery out of order, $name, is refused before anything is touched, reported, never kept', ({ newer, older, first }) => {
  const send = (h: Harness, m: { epoch?: number; sequence: number }, digest?: string) => h.deliver(m.sequence, { ...(m.epoch === undefined ? {} : { epoch: m.epoch }), ...(digest ? { digest } : {}) });

  it('an older delivery while a newer one applies', async () => {
    const h = await serving();
    await step(h, () => send(h, newer));
    expect(applying(h)).toMatchObject({ kind: 'delivery', delivery: newer });
    await step(h, () => send(h, older));
    expect(h.refused).toMatchObject([older]);
    expect(h.kept).toMatchObject(newer);
    expect(h.snapshot().context.pending).toBeUndefined();
    // The refusal waits for the worker, which is applying: nothing is reported beside it.
    expect(h.reportsMade).toEqual([]);
    await step(h, () => h.finishApply());
    expect(h.appliedSequences).toEqual([newer.sequence]);
    // Then the worker reports the refusal, in its turn, and nothing else.
    expect(h.apply?.input).toMatchObject({ kind: 'refusals', refused: [{ kind: 'stale', delivery: older }] });
    await step(h, () => h.finishApply());
    expect(h.reportsMade).toEqual([1, 2]);
    expect(h.appliedSequences).toEqual([newer.sequence]);
    expect(h.apply).toBeUndefined();
  });

  it('an older delivery while a newer one is pending', async () => {
    const h = await serving();
    await step(h, () => send(h, first));
    await step(h, () => send(h, newer));
    expect(h.snapshot().context.pending).toMatchObject({ kind: 'delivery', delivery: newer });
    await step(h, () => send(h, older));
    expect(h.refused).toMatchObject([older]);
    expect(h.kept).toMatchObject(newer);
    expect(h.snapshot().context.pending).toMatchObject({ kind: 'delivery', delivery: newer });
    // The first apply, then the refusal reported, then the newer delivery applied.
    await step(h, () => h.finishApply());
    expect(h.apply?.input.kind).toBe('refusals');
    await step(h, () => h.finishApply());
    await step(h, () => h.finishApply());
    expect(h.appliedSequences).toEqual([first.sequence, newer.sequence]);
  });

  it('an equal order with another digest while pending', async () => {
    const h = await serving();
    await step(h, () => send(h, first));
    await step(h, () => send(h, newer, 'sha256:A'));
    await step(h, () => send(h, newer, 'sha256:B'));
    expect(h.refused).toMatchObject([{ ...newer, digest: 'sha256:B' }]);
    expect(h.kept).toMatchObject({ ...newer, digest: 'sha256:A' });
    expect(h.snapshot().context.pending).toMatchObject({ kind: 'delivery', delivery: { ...newer, digest: 'sha256:A' } });
    await step(h, () => h.finishApply());
    await step(h, () => h.finishApply());
    await step(h, () => h.finishApply());
    expect(h.applied.at(-1)).toMatchObject({ ...newer, digest: 'sha256:A' });
  });

  it('an older delivery after a restart, against what the store says was applied and kept', async () => {
    const h = new Harness();
    harnesses.push(h);
    h.start();
    await h.settle();
    const mark = { ...newer, digest: 'sha256:kept' };
    h.loadStore!.resolve({ enrolled: true, mode: 'adopted', applied: mark, kept: mark, keyValue: { revision: 7, digest: 'sha256:kept' } });
    await h.settle();
    await step(h, () => send(h, older));
    expect(h.refused).toMatchObject([older]);
    // Nothing is applied: the worker only reports the refusal.
    expect(h.apply?.input.kind).toBe('refusals');
    await step(h, () => h.finishApply());
    expect(h.apply).toBeUndefined();
    expect(h.appliedSequences).toEqual([]);
    // The kept value read again (same revision, same digest): not a new delivery, not refused either.
    await step(h, () => h.deliver(newer.sequence, { ...(newer.epoch === undefined ? {} : { epoch: newer.epoch }), digest: 'sha256:kept', revision: 7 }));
    expect(h.apply).toBeUndefined();
    expect(h.refused).toHaveLength(1);
    // The same bytes put again (a new revision): the mesh said it again, and it is applied again.
    await step(h, () => h.deliver(newer.sequence, { ...(newer.epoch === undefined ? {} : { epoch: newer.epoch }), digest: 'sha256:kept', revision: 8 }));
    expect(applying(h)).toMatchObject({ kind: 'delivery', delivery: { ...newer, digest: 'sha256:kept' } });
  });
});

// What the intake refuses for its signatures under the trust root (signed by a key retired by a rotation,
// or by fewer distinct control keys than the threshold) reaches the machine as a refusal without a delivery.
describe('a delivery refused for its signatures under the trust root', () => {
  const retired = { kind: 'retired', message: 'the delivery (revision 7): signed by a key retired at trust version 2' } as const;
  const unapproved = { kind: 'unapproved', message: 'the delivery (revision 8): 1 valid signature of the control keys; trust version 3 needs 2' } as const;

  it('one signed by a retired key and one short of the threshold, while a delivery applies and a newer one waits: each reported in its turn with its kind, in the order they came; neither kept nor applied, the kept and the pending ones untouched', async () => {
    const h = await serving();
    await step(h, () => h.deliver(1));
    await step(h, () => h.deliver(2));
    await step(h, () => h.actor.send({ type: 'REFUSED', refused: retired }));
    await step(h, () => h.actor.send({ type: 'REFUSED', refused: unapproved }));
    expect(h.kept).toMatchObject({ sequence: 2 });
    expect(h.snapshot().context.pending).toMatchObject({ kind: 'delivery', delivery: { sequence: 2 } });
    expect(h.reportsMade).toEqual([]);
    await step(h, () => h.finishApply());
    // The refusals go before the pending delivery, both in one turn of the worker, in the order they came.
    expect(applying(h)).toEqual({ kind: 'refusals', refused: [retired, unapproved] });
    await step(h, () => h.finishApply());
    expect(h.reportsMade).toEqual([1, 2, 3]);
    expect(applying(h)).toMatchObject({ kind: 'delivery', delivery: { sequence: 2 } });
    await step(h, () => h.finishApply());
    expect(h.appliedSequences).toEqual([1, 2]);
    expect(h.kept).toMatchObject({ sequence: 2 });
    expect(h.apply).toBeUndefined();
  });

  it('from a resting host that holds a declaration: the refusal is reported at once and nothing is applied; the kept declaration stays and a newer delivery is applied after it', async () => {
    const h = await serving();
    await step(h, () => h.deliver(1));
    await step(h, () => h.finishApply());
    expect(h.apply).toBeUndefined();
    await step(h, () => h.actor.send({ type: 'REFUSED', refused: unapproved }));
    expect(applying(h)).toEqual({ kind: 'refusals', refused: [unapproved] });
    await step(h, () => h.finishApply());
    expect(h.reportsMade).toEqual([1, 2]);
    expect(h.appliedSequences).toEqual([1]);
    expect(h.kept).toMatchObject({ sequence: 1 });
    await step(h, () => h.actor.send({ type: 'REFUSED', refused: retired }));
    await step(h, () => h.finishApply());
    await step(h, () => h.deliver(2));
    await step(h, () => h.finishApply());
    expect(h.appliedSequences).toEqual([1, 2]);
    expect(h.reportsMade).toEqual([1, 2, 3, 4]);
  });
});

describe('genesis and the key', () => {
  it('the value the control side put with the bundle, read after genesis, is not a new delivery', async () => {
    const h = new Harness();
    harnesses.push(h);
    h.start();
    await h.settle();
    // Genesis applied (sequence 1) and noted the key's revision its declaration is in; nothing is kept yet.
    h.loadStore!.resolve({ enrolled: true, mode: 'converged', applied: { sequence: 1, digest: 'sha256:1' }, keyValue: { revision: 3, digest: 'sha256:1' } });
    await h.settle();
    await step(h, () => h.deliver(1, { revision: 3 }));
    expect(h.apply).toBeUndefined();
    expect(h.kept).toBeUndefined();
    expect(h.refused).toEqual([]);
    // The first send after it, numbered after it, is kept and applied.
    await step(h, () => h.deliver(2, { revision: 4 }));
    expect(applying(h)).toMatchObject({ kind: 'delivery', delivery: { sequence: 2 } });
  });

  it('started with a bundle, an unenrolled host enrols itself once, then starts again; a refused bundle is not tried again', async () => {
    const h = new Harness({ input: { bundle: 'bundle.json' } });
    harnesses.push(h);
    h.start();
    await h.settle();
    h.loadStore!.resolve({ enrolled: false });
    await h.settle();
    expect(h.snapshot().value).toBe('genesis');
    expect(h.genesis?.input).toEqual({ bundle: 'bundle.json' });
    await step(h, () => h.genesis!.reject(new Error('refused')));
    expect(h.snapshot().value).toBe('unenrolled');
    // Looking again a few seconds later: still unenrolled, and the refused bundle is not tried again.
    h.genesis = undefined;
    await step(h, () => h.clock.increment(5_000));
    h.loadStore!.resolve({ enrolled: false });
    await h.settle();
    expect(h.snapshot().value).toBe('unenrolled');
    expect(h.genesis).toBeUndefined();
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

  it('catch a machine that keeps an older delivery over a newer pending one', async () => {
    const h = await serving({ guards: { outOfOrder: () => false } });
    h.deliver(1);
    await h.settle();
    h.deliver(3);
    await h.settle();
    // An older one arriving late (a slow watch): the machine must refuse it and keep 3.
    h.deliver(2);
    await h.settle();
    expect(h.check().join()).toMatch(/\(2\) is older than the one pending \(3\)|2 was kept though older than 3/);
  });

  it('catch a machine that refuses nothing with an epoch either', async () => {
    const h = await serving({ guards: { outOfOrder: () => false } });
    h.deliver(5, { epoch: 2 });
    await h.settle();
    h.finishApply();
    await h.settle();
    h.deliver(9, { epoch: 1 });
    await h.settle();
    expect(h.check().join()).toMatch(/e1\/9 was kept though older than e2\/5/);
  });
});
