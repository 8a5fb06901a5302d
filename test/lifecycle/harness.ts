import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createActor, fromCallback, fromPromise, SimulatedClock, type AnyTransitionDefinition } from 'xstate';
import {
  lifecycleMachine, type DeferredLock, type Delivery, type Ending, type LifecycleInput, type LoadedStore, type PauseOrder, type ReportRef, type Work, type WorkerOutput,
} from '../../machines/lifecycle.js';
import { markOf, type Mark } from '../../src/core/declaration/order.js';
import { Store } from '../../src/core/store/store.js';
import { silentLogger } from '../../src/core/system/log.js';

interface Deferred<I, O> {
  input: I;
  resolve(value: O): void;
  reject(error: unknown): void;
}

/** The key the transition-cover test counts a taken transition by (the same as machines/chart.ts). */
export function transitionKey(t: AnyTransitionDefinition): string {
  const source = t.source;
  const eventType = t.eventType;
  const list = eventType === '' || eventType === undefined ? source.always ?? [] : source.transitions.get(eventType) ?? [];
  return `${source.id} ${eventType || 'always'} #${list.indexOf(t)}`;
}

type Provided = Parameters<typeof lifecycleMachine.provide>[0];

/** Written here, apart from the machine: (epoch, sequence) order, the sequence alone when either has no epoch. */
export function older(a: Mark, b: Mark): boolean {
  if (a.epoch !== undefined && b.epoch !== undefined && a.epoch !== b.epoch) return a.epoch < b.epoch;
  return a.sequence < b.sequence;
}
const sameOrder = (a: Mark, b: Mark) => !older(a, b) && !older(b, a);
const show = (m: Mark) => `${m.epoch === undefined ? '' : `e${m.epoch}/`}${m.sequence}${m.digest.endsWith('other') ? '′' : ''}`;

/** A pause as a command would order it: reason, who, since, and an end when given. */
export function pauseOrder(endsInMs?: number): PauseOrder {
  return { pause: { reason: 'a disk is being replaced', by: 'ops', since: '2026-12-03T09:00:00.000Z', ...(endsInMs === undefined ? {} : { until: '2026-12-03T10:00:00.000Z' }) }, ...(endsInMs === undefined ? {} : { endsInMs }) };
}

/**
 * Runs the real lifecycle machine with controllable actors and a simulated clock, over a real store
 * in a temporary directory, and keeps its own record of what happened so that invariants written
 * apart from the machine can be checked after every step.
 */
export class Harness {
  readonly clock = new SimulatedClock();
  readonly dir = mkdtempSync(join(tmpdir(), 'mesh-host-lifecycle-'));
  readonly store = Store.open(this.dir, silentLogger());
  readonly covered = new Set<string>();
  readonly violations: string[] = [];

  // What the host did, as the harness saw it (not as the machine says).
  readonly applied: Mark[] = [];
  /** Every declaration the worker took, whether its apply then succeeded or not. */
  readonly taken: Mark[] = [];
  readonly reportsMade: number[] = [];
  readonly reportsSent: number[] = [];
  /** Deliveries the machine refused that the worker took to report (never kept). */
  readonly refusedTaken: Delivery[] = [];
  /** What declared.json holds: written by the machine's writeKept effect only. */
  kept: Mark | undefined;
  /** The newest delivery kept while serving: it must be taken by the worker before the host rests idle. */
  newestKeptWhileServing: Mark | undefined;
  inFlight = 0;
  /** The pause the machine was told of (by a command, a start or a worker), as the harness keeps it: until when, by the simulated clock. */
  pausedUntil: number | undefined;
  /** An apply taken while the harness knew the host paused. */
  quiescedWith: Ending | undefined;
  savesAfterQuiesce = 0;
  /** What the machine was last told is held off for a lock (by an apply or a start), until a lock is let go or a bound runs out. */
  deferredTold: DeferredLock[] = [];
  /** A lock was let go (or a bound ran out) and no apply has been taken since. */
  releasedAwaitingApply = false;
  /** Lock watchers running now. */
  watching = 0;
  private stateOnDiskAtQuiesce: string | undefined;
  private nextReport = 0;
  private nextRevision = 0;
  /** The outbox's watch while one runs: tells the machine of every report made and not yet told. */
  private tellReady: (() => void) | undefined;

  loadStore?: Deferred<void, LoadedStore>;
  genesis?: Deferred<{ bundle: unknown }, void>;
  apply?: Deferred<Work, WorkerOutput> & { applying: Mark | undefined; committed?: boolean };
  sender?: Deferred<ReportRef, void>;
  quiesce?: Deferred<{ ending: Ending }, void>;

  readonly actor;

  /** `actions` replaces some of the machine's own, to prove the invariants catch a wrong machine. */
  constructor(options: { actions?: Provided['actions']; guards?: Provided['guards']; input?: LifecycleInput } = {}) {
    const deferred = <I, O>(slot: 'loadStore' | 'genesis' | 'sender' | 'quiesce', input: I) =>
      new Promise<O>((resolve, reject) => {
        (this as unknown as Record<string, Deferred<I, O>>)[slot] = { input, resolve, reject };
      });
    const machine = lifecycleMachine.provide({
      actions: {
        writeKept: (_, { delivery }) => this.keep(delivery),
        sayAlreadyKept: () => {},
        ...options.actions,
      },
      ...(options.guards ? { guards: options.guards } : {}),
      actors: {
        loadStore: fromPromise(() => deferred<void, LoadedStore>('loadStore', undefined)),
        genesis: fromPromise(({ input }) => deferred<{ bundle: unknown }, void>('genesis', input)),
        link: fromCallback(() => () => {}),
        reconcileTimer: fromCallback(() => () => {}),
        outboxWatch: fromCallback(({ sendBack }) => this.watchOutbox((report) => sendBack({ type: 'REPORT_READY', report }))),
        pauseWatch: fromCallback(() => () => {}),
        lockWatch: fromCallback(() => {
          if (++this.watching > 1) this.violations.push(`${this.watching} lock watchers at once`);
          return () => void this.watching--;
        }),
        applyWorker: fromPromise(({ input }) => this.startApply(input)),
        reportSender: fromPromise(({ input }) => deferred<ReportRef, void>('sender', input)),
        quiesce: fromPromise(({ input }) => deferred<{ ending: Ending }, void>('quiesce', input)),
      },
    });
    this.actor = createActor(machine, {
      clock: this.clock,
      input: options.input ?? {},
      inspect: (e) => {
        if (e.type === '@xstate.microstep') for (const t of (e as { _transitions: AnyTransitionDefinition[] })._transitions) this.covered.add(transitionKey(t));
      },
    });
  }

  /** The effect of keeping: declared.json now holds this delivery. */
  private keep(delivery: Delivery): void {
    const mark = markOf(delivery);
    // Judged here by the harness's own rule, not the machine's: only what may follow what is held is kept.
    const held = [this.kept, ...this.applied.slice(-1), this.apply?.applying].filter((m): m is Mark => m !== undefined);
    for (const h of held) {
      if (older(mark, h)) this.violations.push(`${show(mark)} was kept though older than ${show(h)}`);
      else if (sameOrder(mark, h) && mark.digest !== h.digest) this.violations.push(`${show(mark)} was kept though ${show(h)} holds its order with another digest`);
    }
    this.kept = mark;
    if (this.snapshot().matches('serving')) this.newestKeptWhileServing = mark;
  }

  /** Deliveries the machine refused: reported by the worker, or waiting for it; never kept. */
  get refused(): Delivery[] {
    const waiting = this.snapshot().context.refused.flatMap((r) => (r.delivery ? [r.delivery] : []));
    return [...this.refusedTaken, ...waiting];
  }

  /**
   * The apply worker: what it applies, for a delivery and a reconcile alike, is the kept declaration
   * read when the worker starts (a delivery's is the kept one: it was kept when it was taken); refusals
   * are only reported.
   */
  private startApply(input: Work): Promise<WorkerOutput> {
    this.inFlight++;
    if (this.inFlight > 1) this.violations.push(`two applies at once (${this.inFlight})`);
    if (input.kind !== 'refusals' && this.pausedNow) this.violations.push(`an apply (${input.kind}) was taken while the host is paused`);
    if (input.kind !== 'refusals') this.releasedAwaitingApply = false;
    if (input.kind === 'refusals') this.refusedTaken.push(...input.refused.flatMap((r) => (r.delivery ? [r.delivery] : [])));
    if (input.kind === 'delivery' && (!this.kept || this.kept.digest !== input.delivery.digest)) this.violations.push(`the worker took delivery ${show(input.delivery)} but ${this.kept ? show(this.kept) : 'nothing'} is kept`);
    const applying = input.kind === 'refusals' ? undefined : input.kind === 'delivery' ? markOf(input.delivery) : this.kept;
    if (applying !== undefined) this.taken.push(applying);
    return new Promise<WorkerOutput>((resolve, reject) => {
      this.apply = { input, applying, resolve, reject };
    });
  }

  /** Whether the host is paused, by the harness's own record and the simulated clock. */
  get pausedNow(): boolean {
    return this.pausedUntil !== undefined && this.clock.now() < this.pausedUntil;
  }

  /** `mesh-host pause` (with an end in endsInMs, or none): the serving host is told; a host not serving reads it at its start. */
  pause(endsInMs?: number): void {
    if (!this.snapshot().matches('serving')) return;
    const order = pauseOrder(endsInMs);
    this.notePause(order);
    this.actor.send({ type: 'PAUSE', ...order });
  }

  /** `mesh-host resume`. */
  unpause(): void {
    if (!this.snapshot().matches('serving')) return;
    this.pausedUntil = undefined;
    this.actor.send({ type: 'UNPAUSE' });
  }

  /** What the machine was told of a pause (by a command, the store at a start, a worker). */
  notePause(order: PauseOrder | undefined): void {
    this.pausedUntil = order === undefined ? undefined : this.clock.now() + (order.endsInMs ?? Number.POSITIVE_INFINITY);
  }

  /** The worker found the store paused: nothing applied, nothing saved, the work given back. */
  findPause(endsInMs?: number): void {
    const apply = this.apply!;
    this.apply = undefined;
    this.inFlight--;
    if (apply.applying !== undefined) this.taken.pop();
    const order = pauseOrder(endsInMs);
    this.notePause(order);
    apply.resolve({ paused: order });
  }

  /**
   * As the outbox's watch does: every report made and not yet acknowledged is told once, oldest first,
   * as soon as it is made (its head saved) and, at the watch's start, what waits already.
   */
  private watchOutbox(ready: (report: ReportRef) => void): () => void {
    let newest = 0;
    const tell = () => {
      for (const sequence of this.reportsMade) {
        if (sequence <= newest || this.reportsSent.includes(sequence)) continue;
        newest = sequence;
        ready({ sequence });
      }
    };
    this.tellReady = tell;
    tell();
    return () => {
      if (this.tellReady === tell) this.tellReady = undefined;
    };
  }

  /**
   * The apply in flight commits its report (one an apply, one a refusal): the real store saves the head
   * that counts it (refused after quiesce, and the report with it), and the outbox's watch tells of it
   * before the worker ends.
   */
  commitReport(): void {
    const apply = this.apply!;
    apply.committed = true;
    const count = apply.input.kind === 'refusals' ? apply.input.refused.length : 1;
    try {
      this.store.updateHead((s) => (s.reportSequence += count));
      this.store.save();
    } catch {
      return; // quiesced: the save is refused, and the apply's report with it
    }
    for (let i = 0; i < count; i++) this.reportsMade.push(++this.nextReport);
    this.tellReady?.();
  }

  /**
   * Ends the apply in flight: the real store saves (refused after quiesce). Unless `report` is false
   * (a silent reconcile; or a generated walk, where the commit is a step of its own), the apply commits
   * its report first, if it has not yet.
   */
  finishApply(output: { mode?: 'adopted' | 'converged'; report?: boolean; applied?: Mark; deferred?: DeferredLock[] } = {}, fail = false): void {
    const apply = this.apply!;
    if (fail) {
      this.apply = undefined;
      this.inFlight--;
      return apply.reject(new Error('apply failed'));
    }
    if (output.report !== false && !apply.committed) this.commitReport();
    this.apply = undefined;
    this.inFlight--;
    let saved = false;
    try {
      this.store.save();
      saved = true;
    } catch {
      // quiesced: the save is refused
    }
    if (saved && apply.applying !== undefined) this.applied.push(apply.applying);
    // What the machine is told was applied (a generated walk says it itself; the harness keeps its own record).
    const applied = output.applied ?? this.applied.at(-1);
    if (output.deferred) this.deferredTold = output.deferred;
    apply.resolve({ ...(output.mode ? { mode: output.mode } : {}), ...(applied ? { applied } : {}), ...(output.deferred ? { deferred: output.deferred } : {}) });
  }

  /** The lock watcher saw the lock of what waits let go. */
  lockReleased(): void {
    const first = this.deferredTold[0]!;
    this.noteReleased();
    this.actor.send({ type: 'LOCK_RELEASED', resource: first.resource, lock: first.lock, why: 'gone' });
  }

  /** A lock let go, or a bound run out: what waited is due. */
  noteReleased(): void {
    this.deferredTold = [];
    this.releasedAwaitingApply = true;
  }

  get appliedSequences(): number[] {
    return this.applied.map((m) => m.sequence);
  }

  start(): void {
    this.actor.start();
  }

  /** A value of the node's key, as the link brings it: a new revision, unless one is given (a value read again). */
  deliver(sequence: number, options: { epoch?: number; digest?: string; revision?: number } = {}): void {
    const delivery: Delivery = {
      ...(options.epoch === undefined ? {} : { epoch: options.epoch }),
      sequence,
      digest: options.digest ?? (options.epoch === undefined ? `sha256:${sequence}` : `sha256:e${options.epoch}-${sequence}`),
      revision: options.revision ?? ++this.nextRevision,
    };
    this.nextRevision = Math.max(this.nextRevision, delivery.revision!);
    this.actor.send({ type: 'DELIVERY', delivery });
  }

  /** A command run by hand leaves a report in the outbox (next sequence): the outbox's watch tells of it. */
  reportByHand(): void {
    // Only a serving host watches the outbox (a command run while it is down leaves the report for its start).
    if (!this.snapshot().matches('serving')) return;
    this.reportsMade.push(++this.nextReport);
    this.tellReady?.();
  }

  resolveSender(): void {
    const sender = this.sender!;
    this.sender = undefined;
    this.reportsSent.push(sender.input.sequence);
    sender.resolve();
  }

  resolveQuiesce(): void {
    const q = this.quiesce!;
    this.quiesce = undefined;
    this.store.quiesce();
    this.quiescedWith = q.input.ending;
    this.stateOnDiskAtQuiesce = this.stateOnDisk();
    q.resolve();
  }

  /** What a start reads from disk: the store's last applied and the kept declaration. */
  loaded(enrolled: boolean, mode?: 'adopted' | 'converged'): LoadedStore {
    const applied = this.applied.at(-1);
    return { enrolled, ...(mode ? { mode } : {}), ...(applied ? { applied } : {}), ...(this.kept ? { kept: this.kept } : {}) };
  }

  private stateOnDisk(): string {
    const file = join(this.dir, 'state.json');
    return existsSync(file) ? readFileSync(file, 'utf8') : '';
  }

  snapshot() {
    return this.actor.getSnapshot();
  }

  /** Lets the promises of the provided actors settle. */
  async settle(): Promise<void> {
    // A provided promise settles, then the machine hears of it: a few microtask turns, no timers.
    for (let i = 0; i < 8; i++) await Promise.resolve();
  }

  /** Invariants written apart from the machine, checked after every step. */
  check(): string[] {
    const problems = [...this.violations];
    for (let i = 1; i < this.applied.length; i++) {
      if (older(this.applied[i]!, this.applied[i - 1]!)) problems.push(`an older declaration (${show(this.applied[i]!)}) was applied after a newer (${show(this.applied[i - 1]!)})`);
    }
    for (let i = 1; i < this.reportsSent.length; i++) {
      if (this.reportsSent[i]! <= this.reportsSent[i - 1]!) problems.push(`reports left out of order: ${this.reportsSent.join(',')}`);
    }
    this.reportsSent.forEach((s, i) => {
      if (this.reportsMade[i] !== s) problems.push(`report ${s} left where report ${this.reportsMade[i]} was due`);
    });
    if (this.stateOnDiskAtQuiesce !== undefined && this.quiescedWith !== 'move' && this.snapshot().matches('stopped') && this.stateOnDisk() !== this.stateOnDiskAtQuiesce) {
      problems.push('the store was saved after it was quiesced');
    }
    // The kept declaration is never older than anything applied, being applied, or pending.
    const s = this.snapshot();
    const pending = s.context.pending?.kind === 'delivery' ? s.context.pending.delivery : undefined;
    for (const [what, mark] of [['applied', this.applied.at(-1)], ['being applied', this.apply?.applying], ['pending', pending]] as const) {
      if (mark && (!this.kept || older(this.kept, mark))) problems.push(`the kept declaration (${this.kept ? show(this.kept) : 'none'}) is older than the one ${what} (${show(mark)})`);
    }
    for (const r of this.refused) {
      if (this.kept && this.kept.digest === r.digest && sameOrder(this.kept, r)) problems.push(`the refused delivery ${show(r)} was kept`);
    }
    if (s.matches({ serving: { worker: 'idle' } }) && s.context.pending !== undefined && this.inFlight === 0 && s.context.ending === undefined && !this.pausedNow) {
      problems.push(`idle with ${s.context.pending.kind} pending, though the host is not paused`);
    }
    if (s.matches('serving') && this.deferredTold.length > 0 && this.watching !== 1) problems.push(`${this.deferredTold.length} step(s) held off for a lock, but ${this.watching} lock watchers run`);
    if (s.matches('serving') && this.deferredTold.length === 0 && this.watching > 0) problems.push('a lock is watched though nothing waits for one');
    if (s.matches({ serving: { worker: 'idle' } }) && this.releasedAwaitingApply && this.inFlight === 0 && s.context.ending === undefined && !this.pausedNow) {
      problems.push('idle, though a lock was let go (or its bound ran out) and what it held off was never applied');
    }
    if (s.matches({ serving: { worker: 'idle' } }) && s.context.refused.length > 0 && this.inFlight === 0) problems.push(`idle with ${s.context.refused.length} refusal(s) not reported`);
    // Ending between applies reports what waits first: only an apply left running past the grace loses the refusals behind it.
    if (this.quiesce && s.context.refused.length > 0 && !s.context.abandoned) problems.push(`quiescing with ${s.context.refused.length} refusal(s) never reported`);
    if (s.matches({ serving: { worker: 'idle' } }) && s.context.pending === undefined && this.inFlight === 0 && this.newestKeptWhileServing) {
      const newest = this.newestKeptWhileServing;
      if (!this.taken.some((t) => t.digest === newest.digest && sameOrder(t, newest))) problems.push(`idle with nothing pending, but the newest delivery (${show(newest)}) was never taken by the worker`);
    }
    return problems;
  }

  cleanup(): void {
    this.actor.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
