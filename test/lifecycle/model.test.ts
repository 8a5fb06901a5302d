import { afterEach, describe, expect, it } from 'vitest';
import { getShortestPaths } from 'xstate/graph';
import { lifecycleMachine, type LifecycleEvent, type LifecycleInput } from '../../machines/lifecycle.js';
import type { Mark } from '../../src/core/declaration/order.js';
import { chartOf } from '../../machines/chart.js';
import { Harness, pauseOrder, transitionKey } from './harness.js';

type AnyEvent = LifecycleEvent | { type: string; [k: string]: unknown };
type Snap = ReturnType<Harness['snapshot']>;

const SIGNATURE_REFUSALS = [
  { kind: 'forged', message: 'the delivery (revision 9): the signature does not verify' },
  { kind: 'retired', message: 'the delivery (revision 9): signed by a key retired at trust version 2' },
  { kind: 'unapproved', message: 'the delivery (revision 9): 1 valid signature of the control keys; trust version 3 needs 2' },
] as const;
const MAX_SEQUENCE = 2;
/** A pause with an end lasts this long. */
const PAUSE_MS = 60_000;
/** A restart held off by a lock, as an apply or a start tells it. */
const LOCKED = [{ resource: 'app', lock: '/run/app/busy.lock', endsInMs: 600_000 }];
const chart = chartOf(lifecycleMachine);
const afterEvents = [...new Set(chart.transitions.filter((t) => t.event.startsWith('xstate.after.')).map((t) => ({ event: t.event, source: t.source })).map((x) => JSON.stringify(x)))].map((x) => JSON.parse(x) as { event: string; source: string });

const newest = (s: Snap) => Math.max(0, s.context.kept?.sequence ?? 0, ...[s.context.pending, s.context.inFlight].map((p) => (p?.kind === 'delivery' ? p.delivery.sequence : 0)));
const markOf = (m: Mark): Mark => ({ sequence: m.sequence, digest: m.digest });
/** What the worker applies: the delivery it took, or for a reconcile the kept declaration (or what was applied before the mesh spoke). */
const applying = (s: Snap): Mark | undefined => {
  const p = s.context.inFlight;
  if (p?.kind === 'refusals') return s.context.applied;
  if (p?.kind === 'delivery') return markOf(p.delivery);
  return s.context.kept ? markOf(s.context.kept) : s.context.applied;
};
const nextReport = (s: Snap) => Math.max(s.context.sentThrough, ...s.context.outbox.map((r) => r.sequence)) + 1;
/** The actors a state runs, read from the definition (the graph is built without running any). */
const invokedIn = chart.states.flatMap((st) => st.invokes.map((src) => ({ src, state: st.id })));
const children = (s: Snap) => invokedIn.filter((x) => active(s, x.state)).map((x) => x.src);
const active = (s: Snap, id: string) => (s as unknown as { _nodes: Array<{ id: string }> })._nodes.some((n) => n.id === id);

/** The events a host can meet in a state: outside ones everywhere (the races), actor results where that actor runs. */
function eventsFor(s: Snap): AnyEvent[] {
  if (s.status === 'done') return [];
  const events: AnyEvent[] = [{ type: 'RECONCILE_TICK' }, { type: 'DRIFT_FOUND', found: ['drift: /etc/x content changed'] }, { type: 'STOP' }, { type: 'STAND_ASIDE' }, { type: 'MOVE' }, { type: 'RESUME' }];
  // The link region decides nothing the others read: it is walked from a resting host only, which
  // keeps the walk from doubling every state by it.
  const resting = s.matches({ serving: { worker: 'idle' } }) && s.context.pending === undefined && s.context.outbox.length === 0 && s.context.ending === undefined;
  if (resting || !s.matches('serving')) events.push({ type: 'LINK_UP' }, { type: 'LINK_DOWN' });
  const next = newest(s) + 1;
  const kept = s.context.kept;
  const keyValue = s.context.keyValue;
  const revision = (keyValue?.revision ?? 0) + 1;
  // A newer delivery; and the races of a link: an older one, one equal in order with another digest,
  // the kept value read again (same revision), the same bytes put again (a new revision).
  if (next <= MAX_SEQUENCE) events.push({ type: 'DELIVERY', delivery: { sequence: next, digest: `sha256:${next}`, revision } });
  if (kept) {
    events.push({ type: 'DELIVERY', delivery: { sequence: kept.sequence, digest: `${kept.digest}other`, revision } });
    if (keyValue) events.push({ type: 'DELIVERY', delivery: { sequence: kept.sequence, digest: keyValue.digest, revision: keyValue.revision } });
    events.push({ type: 'DELIVERY', delivery: { sequence: kept.sequence, digest: kept.digest, revision } });
    if (kept.sequence > 1) events.push({ type: 'DELIVERY', delivery: { sequence: kept.sequence - 1, digest: `sha256:${kept.sequence - 1}`, revision } });
  }
  // A report ready (the outbox's watch tells it): the apply in flight committing its own, before it ends,
  // or one a command run by hand left; at any moment, the worker's end and the sender's included.
  if (s.context.outbox.length < 2) events.push({ type: 'REPORT_READY', report: { sequence: nextReport(s) } });
  // A pause asked by hand: from a resting host (for a while, or until resumed), and while an apply runs
  // with nothing else waiting. Each is walked on from there with what a paused host meets (whilePaused).
  const paused = s.matches({ serving: { pause: 'paused' } }) || s.matches({ serving: { pause: 'pausedUntil' } });
  if (paused) events.push({ type: 'UNPAUSE' });
  else if (resting) events.push({ type: 'PAUSE', ...pauseOrder() }, ...(kept ? [] : [{ type: 'PAUSE', ...pauseOrder(PAUSE_MS) }]));
  else if (s.matches({ serving: { worker: 'applying' } }) && s.context.pending === undefined && s.context.outbox.length === 0) events.push({ type: 'PAUSE', ...pauseOrder() });
  // A value the intake could not take (its signature does not verify): refused, for the worker to report.
  // Offered from a resting host (the order rule's refusals, offered everywhere above, take the same queue).
  // The signature refusals by turns (forged, signed by a retired key, short of the trust root's
  // threshold): one event a state, so the walk grows no wider, and each kind is met.
  if (resting) events.push({ type: 'REFUSED', refused: SIGNATURE_REFUSALS[nextReport(s) % SIGNATURE_REFUSALS.length]! });
  const running = children(s);
  if (running.includes('loadStore')) {
    const { applied, kept: keptMark, keyValue: value } = s.context;
    const known = { ...(applied ? { applied } : {}), ...(keptMark ? { kept: keptMark } : {}), ...(value ? { keyValue: value } : {}) };
    for (const enrolled of [true, false]) for (const mode of ['adopted', 'converged'] as const) events.push({ type: 'xstate.done.actor.loadStore', output: { enrolled, mode, ...known } });
    // A store that keeps a pause (asked while the host was down, or before a restart).
    if (!keptMark) events.push({ type: 'xstate.done.actor.loadStore', output: { enrolled: true, mode: 'adopted', ...known, paused: pauseOrder(PAUSE_MS) } });
    // A store that keeps a restart held off for a lock (across a restart of the host).
    if (!keptMark) events.push({ type: 'xstate.done.actor.loadStore', output: { enrolled: true, mode: 'adopted', ...known, deferred: LOCKED } });
    events.push({ type: 'xstate.error.actor.loadStore', error: 'unreadable' });
  }
  if (running.includes('genesis')) events.push({ type: 'xstate.done.actor.genesis' }, { type: 'xstate.error.actor.genesis', error: 'refused' });
  if (running.includes('applyWorker')) {
    const mode = s.context.mode === 'converged' ? 'adopted' : 'converged';
    const applied = applying(s);
    const done = (extra: object) => ({ type: 'xstate.done.actor.applyWorker', output: { ...(applied ? { applied } : {}), ...extra } });
    // The worker's output names no report: its report reached the machine as REPORT_READY, or none was made.
    events.push(done({}), done({ mode }));
    // An apply that held a restart off for a lock; and, while one waits, an apply (a newer declaration) after which nothing does.
    // (Offered with nothing else waiting: the queue's races are walked without a lock.)
    if (s.context.inFlight?.kind !== 'refusals' && s.context.pending === undefined && s.context.outbox.length === 0) events.push(done({ deferred: LOCKED }));
    if (deferring(s) && s.context.inFlight?.kind !== 'refusals') events.push(done({ deferred: [] }));
    // The worker found the store paused under the lock (a pause asked as the apply began): it gives the work back.
    if (s.context.inFlight?.kind !== 'refusals') events.push({ type: 'xstate.done.actor.applyWorker', output: { paused: pauseOrder() } });
    events.push({ type: 'xstate.error.actor.applyWorker', error: 'failed' });
  }
  if (running.includes('reportSender')) events.push({ type: 'xstate.done.actor.reportSender' }, { type: 'xstate.error.actor.reportSender', error: 'no ack' });
  if (running.includes('quiesce')) events.push({ type: 'xstate.done.actor.quiesce' }, { type: 'xstate.error.actor.quiesce', error: 'failed' });
  if (deferring(s)) events.push({ type: 'LOCK_RELEASED', resource: 'app', lock: '/run/app/busy.lock', why: 'gone' });
  for (const a of afterEvents) if (active(s, a.source)) events.push({ type: a.event });
  const offered = paused ? events.filter((e) => whilePaused(e, next)) : events;
  return deferring(s) ? offered.filter((e) => whileDeferred(e, next)) : offered;
}

const deferring = (s: Snap) => s.matches({ serving: { deferral: 'waiting' } });

/**
 * What a host with a step held off for a lock is offered: the lock let go, its bound run out, a newer
 * delivery (the newest declaration decides whether the step is still due), a tick, a pause and its end,
 * the apply's results, the outbox's, and a stop (a restart reads what waits from the store). The races
 * of the order rule and the link are walked without a lock: here they would double the walk.
 */
function whileDeferred(e: AnyEvent, next: number): boolean {
  if (e.type === 'DELIVERY') return (e as { delivery: { sequence: number } }).delivery.sequence === next;
  return ['LOCK_RELEASED', 'RECONCILE_TICK', 'PAUSE', 'UNPAUSE', 'STOP', 'xstate.done.actor.applyWorker', 'xstate.error.actor.applyWorker', 'xstate.done.actor.reportSender', 'xstate.done.actor.quiesce'].includes(e.type) || e.type.startsWith('xstate.after.');
}

/**
 * What a paused host is offered: what it must stand aside from (a newer delivery, a tick, a finding), the
 * apply that was running when the pause came, the end of the pause, and a stop. The races of the order
 * rule, the link and the outbox are decided as when not paused, and are walked there: offered here too,
 * they would multiply every state by the pause, and the walk would not finish.
 */
function whilePaused(e: AnyEvent, next: number): boolean {
  if (e.type === 'DELIVERY') return (e as { delivery: { sequence: number } }).delivery.sequence === next;
  return ['RECONCILE_TICK', 'DRIFT_FOUND', 'UNPAUSE', 'STOP', 'xstate.done.actor.applyWorker', 'xstate.error.actor.applyWorker', 'xstate.done.actor.quiesce'].includes(e.type) || e.type.startsWith('xstate.after.');
}

/**
 * A finite summary: the state value and the few facts the machine decides with there. The queue and
 * the outbox matter while serving (and across a restart, for what is pending); the mode is in the
 * value once serving, and is carried otherwise only to choose it on the way in.
 */
function serialize(s: Snap): string {
  const p = (x: typeof s.context.inFlight) => (x ? (x.kind === 'delivery' ? `d${x.delivery.sequence}` : x.kind === 'refusals' ? 'x' : 'r') : '-');
  const serving = s.matches('serving');
  return JSON.stringify([
    s.value,
    p(s.context.pending),
    serving ? p(s.context.inFlight) : '-',
    serving ? Math.min(s.context.refused.length, 1) : '-',
    s.context.ending ?? '-',
    // What the order guards decide with while serving: whether a declaration is kept, and whether it is the one applied.
    serving && s.context.kept ? (s.context.applied?.digest === s.context.kept.digest ? 'kept=applied' : 'kept') : '-',
    s.context.bundle === undefined ? '-' : 'bundle',
    serving ? Math.min(s.context.outbox.length, 1) : '-',
    s.matches('starting') || s.matches('genesis') ? (s.context.mode ?? '-') : '-',
    s.status,
  ]);
}

/** The events a transition raises in the same step (an ending, the mode after an apply): their transitions count too. */
function followUps(s: Snap, event: AnyEvent): AnyEvent[] {
  if (['STOP', 'STAND_ASIDE', 'MOVE'].includes(event.type)) return [{ type: 'END_REQUESTED' }];
  if (event.type === 'xstate.done.actor.applyWorker') {
    const paused = (event as { output?: { paused?: object } }).output?.paused;
    if (paused) return [{ type: 'PAUSE', ...paused }];
    const output = (event as { output?: { mode?: string; deferred?: unknown[] } }).output;
    return [{ type: 'MODE_IS', mode: output?.mode ?? s.context.mode ?? 'adopted' }, { type: 'DEFERRED', ...(output?.deferred ? { deferred: output.deferred } : {}) }];
  }
  return [];
}

/** A host started without a bundle, and one started with one (`mesh-host run --bundle`). */
const inputs: LifecycleInput[] = [{}, { bundle: 'bundle.json' }];
/** With a bundle, the walk stops once genesis is over: what follows is the walk without one. */
const offered = (input: LifecycleInput) => (s: Snap) => (input.bundle !== undefined && s.context.bundle === undefined && s.matches('serving') ? [] : eventsFor(s));
const paths = inputs.flatMap((input) =>
  getShortestPaths(lifecycleMachine, {
    events: offered(input) as never,
    serializeState: serialize as never,
    serializeEvent: ((e: AnyEvent) => JSON.stringify(e)) as never,
    input,
  }).map((path) => ({ ...path, input })),
);

/** Drives the real actor through one generated step: outside events are sent, actor results resolved, delays elapsed. */
async function drive(h: Harness, event: AnyEvent): Promise<void> {
  const type = event.type;
  const output = (event as { output?: Record<string, unknown> }).output;
  if (type === 'DELIVERY') {
    const d = (event as { delivery: { sequence: number; digest: string; revision: number } }).delivery;
    h.deliver(d.sequence, { digest: d.digest, revision: d.revision });
  }
  // The apply in flight commits its report first (once); any other report ready is one a command left.
  else if (type === 'REPORT_READY' && h.apply && !h.apply.committed) h.commitReport();
  else if (type === 'REPORT_READY') h.reportByHand();
  else if (type === 'PAUSE') h.pause((event as { endsInMs?: number }).endsInMs);
  else if (type === 'UNPAUSE') h.unpause();
  else if (type === 'LOCK_RELEASED') h.lockReleased();
  else if (type === 'xstate.done.actor.loadStore') {
    h.notePause(output?.paused as never);
    h.deferredTold = (output?.deferred as typeof h.deferredTold | undefined) ?? [];
    h.loadStore!.resolve(output as never);
  }
  else if (type === 'xstate.error.actor.loadStore') h.loadStore!.reject(new Error('unreadable'));
  else if (type === 'xstate.done.actor.genesis') h.genesis!.resolve();
  else if (type === 'xstate.error.actor.genesis') h.genesis!.reject(new Error('refused'));
  else if (type === 'xstate.done.actor.applyWorker' && output?.paused) h.findPause();
  else if (type === 'xstate.done.actor.applyWorker') h.finishApply({ ...(output?.mode ? { mode: output.mode as 'adopted' } : {}), ...(output?.applied ? { applied: output.applied as Mark } : {}), ...(output?.deferred ? { deferred: output.deferred as never } : {}), report: false });
  else if (type === 'xstate.error.actor.applyWorker') h.finishApply({}, true);
  else if (type === 'xstate.done.actor.reportSender') h.resolveSender();
  else if (type === 'xstate.error.actor.reportSender') h.sender!.reject(new Error('no ack'));
  else if (type === 'xstate.done.actor.quiesce') h.resolveQuiesce();
  else if (type === 'xstate.error.actor.quiesce') h.quiesce!.reject(new Error('failed'));
  else if (type.startsWith('xstate.after.')) {
    const delay = type.split('.')[2]!;
    const given = (lifecycleMachine.implementations.delays as Record<string, number | ((a: { context: Snap['context'] }) => number)>)[delay];
    const ms = typeof given === 'function' ? given({ context: h.snapshot().context }) : (given ?? Number(delay));
    if (delay === 'deferralEnds') h.noteReleased();
    h.clock.increment(ms);
  } else h.actor.send(event as LifecycleEvent);
  await h.settle();
}

const harnesses: Harness[] = [];
afterEach(() => harnesses.splice(0).forEach((h) => h.cleanup()));

async function walk(steps: Array<{ event: AnyEvent; state: Snap }>, input: LifecycleInput, extra?: AnyEvent): Promise<Harness> {
  const h = new Harness({ input });
  harnesses.push(h);
  h.start();
  await h.settle();
  const all = extra ? [...steps.map((s) => s.event), extra] : steps.map((s) => s.event);
  for (const [i, event] of all.entries()) {
    if (i === 0 && event.type === 'xstate.init') continue;
    await drive(h, event);
    const problems = h.check();
    if (problems.length) throw new Error(`after ${all.slice(0, i + 1).map((e) => e.type).join(' → ')}: ${problems.join('; ')}`);
    const expected = steps[i]?.state;
    if (expected && i < steps.length) expect(serialize(h.snapshot()), `step ${i} (${event.type}) of ${all.slice(0, i + 1).map((e) => JSON.stringify(e)).join(' → ')}`).toBe(serialize(expected));
  }
  return h;
}

describe('the lifecycle, walked from its own definition', () => {
  it('reaches every state node of the definition', () => {
    const reached = new Set<string>();
    for (const p of paths) for (const node of (p.state as unknown as { _nodes: Array<{ id: string }> })._nodes) reached.add(node.id);
    // Each `reading` is transient: its eventless transitions always leave it within the same step.
    const resting = chart.states.map((s) => s.id).filter((id) => !['host.serving.mode.reading', 'host.serving.pause.reading', 'host.serving.deferral.reading'].includes(id));
    expect([...reached].sort()).toEqual(resting.sort());
  });

  it('every transition of the definition is taken, with the invariants holding after every step', async () => {
    const covered = new Set<string>();
    // Shortest paths to every state, each walked with the invariants checked after every step; then from
    // each state every event it offers whose transition no walk has taken yet: that takes each transition.
    for (const path of paths) {
      const h = await walk(path.steps as never, path.input);
      h.covered.forEach((k) => covered.add(k));
      // Thousands of walks: each one's store folder goes as soon as it is read, not at the end.
      h.cleanup();
    }
    for (const path of paths) {
      for (const event of offered(path.input)(path.state)) {
        const taking = [event, ...followUps(path.state, event)].flatMap((e) => lifecycleMachine.getTransitionData(path.state as never, e as never).map(transitionKey));
        // An event no transition of this state takes changes nothing: the path itself checked the state.
        // One whose transitions (and those of what it raises) are all taken already is not walked again.
        if (taking.length === 0 || taking.every((k) => covered.has(k))) continue;
        const h = await walk(path.steps as never, path.input, event);
        h.covered.forEach((k) => covered.add(k));
        h.cleanup();
      }
    }
    const all = chart.transitions.map((t) => t.key).sort();
    expect(all.filter((k) => !covered.has(k)), `not taken: ${JSON.stringify(all.filter((k) => !covered.has(k)))}`).toEqual([]);
    expect([...covered].filter((k) => !all.includes(k))).toEqual([]);
  }, 900_000);
});
