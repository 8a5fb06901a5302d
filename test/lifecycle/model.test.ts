import { afterEach, describe, expect, it } from 'vitest';
import { getShortestPaths } from 'xstate/graph';
import { lifecycleMachine, type LifecycleEvent } from '../../machines/lifecycle.js';
import { chartOf } from '../../machines/chart.js';
import { Harness } from './harness.js';

type AnyEvent = LifecycleEvent | { type: string; [k: string]: unknown };
type Snap = ReturnType<Harness['snapshot']>;

const MAX_SEQUENCE = 2;
const chart = chartOf(lifecycleMachine);
const afterEvents = [...new Set(chart.transitions.filter((t) => t.event.startsWith('xstate.after.')).map((t) => ({ event: t.event, source: t.source })).map((x) => JSON.stringify(x)))].map((x) => JSON.parse(x) as { event: string; source: string });

const newest = (s: Snap) => Math.max(0, ...[s.context.pending, s.context.inFlight].map((p) => (p?.kind === 'delivery' ? p.delivery.sequence : 0)));
/** The actors a state runs, read from the definition (the graph is built without running any). */
const invokedIn = chart.states.flatMap((st) => st.invokes.map((src) => ({ src, state: st.id })));
const children = (s: Snap) => invokedIn.filter((x) => active(s, x.state)).map((x) => x.src);
const active = (s: Snap, id: string) => (s as unknown as { _nodes: Array<{ id: string }> })._nodes.some((n) => n.id === id);

/** The events a host can meet in a state: outside ones everywhere (the races), actor results where that actor runs. */
function eventsFor(s: Snap): AnyEvent[] {
  if (s.status === 'done') return [];
  const events: AnyEvent[] = [{ type: 'RECONCILE_TICK' }, { type: 'STOP' }, { type: 'STAND_ASIDE' }, { type: 'MOVE' }, { type: 'RESUME' }, { type: 'LINK_UP' }, { type: 'LINK_DOWN' }, { type: 'GENESIS', bundle: {} }];
  const next = newest(s) + 1;
  if (next <= MAX_SEQUENCE) events.push({ type: 'DELIVERY', delivery: { sequence: next, digest: `sha256:${next}` } });
  if (s.context.outbox.length < 2) events.push({ type: 'REPORT_MADE', report: { sequence: 0 } });
  const running = children(s);
  if (running.includes('loadStore')) {
    for (const enrolled of [true, false]) for (const mode of ['adopted', 'converged'] as const) events.push({ type: 'xstate.done.actor.loadStore', output: { enrolled, mode, outbox: [] } });
    events.push({ type: 'xstate.error.actor.loadStore', error: 'unreadable' });
  }
  if (running.includes('genesis')) events.push({ type: 'xstate.done.actor.genesis', output: { mode: 'converged' } }, { type: 'xstate.error.actor.genesis', error: 'refused' });
  if (running.includes('applyWorker')) {
    const mode = s.context.mode === 'converged' ? 'adopted' : 'converged';
    events.push({ type: 'xstate.done.actor.applyWorker', output: { report: { sequence: 0 } } }, { type: 'xstate.done.actor.applyWorker', output: { report: { sequence: 0 }, mode } });
    if (s.context.inFlight?.kind === 'reconcile') events.push({ type: 'xstate.done.actor.applyWorker', output: {} });
    events.push({ type: 'xstate.error.actor.applyWorker', error: 'failed' });
  }
  if (running.includes('reportSender')) events.push({ type: 'xstate.done.actor.reportSender' }, { type: 'xstate.error.actor.reportSender', error: 'no ack' });
  if (running.includes('quiesce')) events.push({ type: 'xstate.done.actor.quiesce' }, { type: 'xstate.error.actor.quiesce', error: 'failed' });
  for (const a of afterEvents) if (active(s, a.source)) events.push({ type: a.event });
  return events;
}

/**
 * A finite summary: the state value and the few facts the machine decides with there. The queue and
 * the outbox matter while serving (and across a restart, for what is pending); the mode is in the
 * value once serving, and is carried otherwise only to choose it on the way in.
 */
function serialize(s: Snap): string {
  const p = (x: typeof s.context.pending) => (x ? (x.kind === 'delivery' ? `d${x.delivery.sequence}` : 'r') : '-');
  const serving = s.matches('serving');
  return JSON.stringify([
    s.value,
    p(s.context.pending),
    serving ? p(s.context.inFlight) : '-',
    s.context.ending ?? '-',
    serving ? Math.min(s.context.outbox.length, 2) : '-',
    s.matches('starting') || s.matches('genesis') ? (s.context.mode ?? '-') : '-',
    s.status,
  ]);
}

const paths = getShortestPaths(lifecycleMachine, {
  events: eventsFor as never,
  serializeState: serialize as never,
  serializeEvent: ((e: AnyEvent) => JSON.stringify(e)) as never,
});

/** Drives the real actor through one generated step: outside events are sent, actor results resolved, delays elapsed. */
async function drive(h: Harness, event: AnyEvent): Promise<void> {
  const type = event.type;
  const output = (event as { output?: Record<string, unknown> }).output;
  if (type === 'DELIVERY') h.deliver((event as { delivery: { sequence: number } }).delivery.sequence);
  else if (type === 'REPORT_MADE') h.refuse();
  else if (type === 'xstate.done.actor.loadStore') h.loadStore!.resolve(output as never);
  else if (type === 'xstate.error.actor.loadStore') h.loadStore!.reject(new Error('unreadable'));
  else if (type === 'xstate.done.actor.genesis') h.genesis!.resolve(output as never);
  else if (type === 'xstate.error.actor.genesis') h.genesis!.reject(new Error('refused'));
  else if (type === 'xstate.done.actor.applyWorker') h.finishApply({ ...(output?.mode ? { mode: output.mode as 'adopted' } : {}), silent: !output?.report });
  else if (type === 'xstate.error.actor.applyWorker') h.finishApply({}, true);
  else if (type === 'xstate.done.actor.reportSender') h.resolveSender();
  else if (type === 'xstate.error.actor.reportSender') h.sender!.reject(new Error('no ack'));
  else if (type === 'xstate.done.actor.quiesce') h.resolveQuiesce();
  else if (type === 'xstate.error.actor.quiesce') h.quiesce!.reject(new Error('failed'));
  else if (type.startsWith('xstate.after.')) {
    const delay = type.split('.')[2]!;
    const ms = (lifecycleMachine.implementations.delays as Record<string, number>)[delay] ?? Number(delay);
    h.clock.increment(ms);
  } else h.actor.send(event as LifecycleEvent);
  await h.settle();
}

const harnesses: Harness[] = [];
afterEach(() => harnesses.splice(0).forEach((h) => h.cleanup()));

async function walk(steps: Array<{ event: AnyEvent; state: Snap }>, extra?: AnyEvent): Promise<Harness> {
  const h = new Harness();
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
    if (expected && i < steps.length) expect(serialize(h.snapshot()), `step ${i} (${event.type})`).toBe(serialize(expected));
  }
  return h;
}

describe('the lifecycle, walked from its own definition', () => {
  it('reaches every state node of the definition', () => {
    const reached = new Set<string>();
    for (const p of paths) for (const node of (p.state as unknown as { _nodes: Array<{ id: string }> })._nodes) reached.add(node.id);
    // `reading` is transient: its eventless transitions always leave it within the same step.
    const resting = chart.states.map((s) => s.id).filter((id) => id !== 'host.serving.mode.reading');
    expect([...reached].sort()).toEqual(resting.sort());
  });

  it('every transition of the definition is taken, with the invariants holding after every step', async () => {
    const covered = new Set<string>();
    // Shortest paths to every state, then every event the state offers: that takes each transition.
    for (const path of paths) {
      for (const event of eventsFor(path.state)) {
        // An event no transition of this state takes changes nothing: the path itself checked the state.
        if (!event.type.startsWith('xstate.') && !path.state.can(event as LifecycleEvent)) continue;
        const h = await walk(path.steps as never, event);
        h.covered.forEach((k) => covered.add(k));
      }
    }
    const all = chart.transitions.map((t) => t.key).sort();
    expect(all.filter((k) => !covered.has(k))).toEqual([]);
    expect([...covered].filter((k) => !all.includes(k))).toEqual([]);
  }, 300_000);
});
