import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createActor, fromCallback, fromPromise, SimulatedClock, type AnyTransitionDefinition } from 'xstate';
import {
  lifecycleMachine, type Delivery, type Ending, type LoadedStore, type Pending, type ReportRef, type WorkerOutput,
} from '../../machines/lifecycle.js';
import { Store } from '../../src/store/store.js';
import { silentLogger } from '../../src/system/log.js';

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
  readonly applied: number[] = [];
  /** Every declaration the worker took, whether its apply then succeeded or not. */
  readonly taken: number[] = [];
  readonly reportsMade: number[] = [];
  readonly reportsSent: number[] = [];
  /** The newest declaration the link kept (declared.json): what a reconcile applies. */
  kept: Delivery | undefined;
  newestDeliveredWhileServing: Delivery | undefined;
  inFlight = 0;
  quiescedWith: Ending | undefined;
  savesAfterQuiesce = 0;
  private stateOnDiskAtQuiesce: string | undefined;
  private nextReport = 0;

  loadStore?: Deferred<void, LoadedStore>;
  genesis?: Deferred<{ bundle: unknown }, WorkerOutput>;
  apply?: Deferred<Pending, WorkerOutput> & { applying: number | undefined };
  sender?: Deferred<ReportRef, void>;
  quiesce?: Deferred<{ ending: Ending }, void>;

  readonly actor;

  /** `actions` replaces some of the machine's own, to prove the invariants catch a wrong machine. */
  constructor(options: { actions?: Parameters<typeof lifecycleMachine.provide>[0]['actions'] } = {}) {
    const deferred = <I, O>(slot: 'loadStore' | 'genesis' | 'sender' | 'quiesce', input: I) =>
      new Promise<O>((resolve, reject) => {
        (this as unknown as Record<string, Deferred<I, O>>)[slot] = { input, resolve, reject };
      });
    const machine = lifecycleMachine.provide({
      ...(options.actions ? { actions: options.actions } : {}),
      actors: {
        loadStore: fromPromise(() => deferred<void, LoadedStore>('loadStore', undefined)),
        genesis: fromPromise(({ input }) => deferred<{ bundle: unknown }, WorkerOutput>('genesis', input)),
        link: fromCallback(() => () => {}),
        reconcileTimer: fromCallback(() => () => {}),
        applyWorker: fromPromise(({ input }) => this.startApply(input)),
        reportSender: fromPromise(({ input }) => deferred<ReportRef, void>('sender', input)),
        quiesce: fromPromise(({ input }) => deferred<{ ending: Ending }, void>('quiesce', input)),
      },
    });
    this.actor = createActor(machine, {
      clock: this.clock,
      inspect: (e) => {
        if (e.type === '@xstate.microstep') for (const t of (e as { _transitions: AnyTransitionDefinition[] })._transitions) this.covered.add(transitionKey(t));
      },
    });
  }

  /** The apply worker: what a reconcile applies is the kept declaration read when the worker starts. */
  private startApply(input: Pending): Promise<WorkerOutput> {
    this.inFlight++;
    if (this.inFlight > 1) this.violations.push(`two applies at once (${this.inFlight})`);
    const applying = input.kind === 'delivery' ? input.delivery.sequence : this.kept?.sequence;
    if (applying !== undefined) this.taken.push(applying);
    return new Promise<WorkerOutput>((resolve, reject) => {
      this.apply = { input, applying, resolve, reject };
    });
  }

  /** Ends the apply in flight: the real store saves (refused after quiesce), one report is made. */
  finishApply(output: { mode?: 'adopted' | 'converged'; silent?: boolean } = {}, fail = false): void {
    const apply = this.apply!;
    this.apply = undefined;
    this.inFlight--;
    if (fail) return apply.reject(new Error('apply failed'));
    if (apply.applying !== undefined) this.applied.push(apply.applying);
    let report: ReportRef | undefined;
    try {
      this.store.updateHead((s) => (s.reportSequence += output.silent ? 0 : 1));
      this.store.save();
      if (!output.silent) {
        report = { sequence: ++this.nextReport };
        this.reportsMade.push(report.sequence);
      }
    } catch {
      // quiesced: the save is refused, and the apply's report with it
    }
    apply.resolve({ ...(report ? { report } : {}), ...(output.mode ? { mode: output.mode } : {}) });
  }

  start(): void {
    this.actor.start();
  }

  deliver(sequence: number): void {
    const delivery: Delivery = { sequence, digest: `sha256:${sequence}` };
    // The link keeps the declaration (declared.json) before it enqueues it.
    this.kept = delivery;
    if (this.snapshot().matches('serving')) this.newestDeliveredWhileServing = delivery;
    this.actor.send({ type: 'DELIVERY', delivery });
  }

  /** A refused delivery: the link makes its report (next sequence) outside the worker. */
  refuse(): void {
    // Only a connected link (serving) receives, and so refuses, a delivery.
    if (!this.snapshot().matches('serving')) return void this.actor.send({ type: 'REPORT_MADE', report: { sequence: -1 } });
    const report = { sequence: ++this.nextReport };
    this.reportsMade.push(report.sequence);
    this.actor.send({ type: 'REPORT_MADE', report });
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
    for (let i = 0; i < 6; i++) await Promise.resolve();
  }

  /** Invariants written apart from the machine, checked after every step. */
  check(): string[] {
    const problems = [...this.violations];
    for (let i = 1; i < this.applied.length; i++) {
      if (this.applied[i]! < this.applied[i - 1]!) problems.push(`an older declaration (${this.applied[i]}) was applied after a newer (${this.applied[i - 1]})`);
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
    const s = this.snapshot();
    if (s.matches({ serving: { worker: 'idle' } }) && s.context.pending === undefined && this.inFlight === 0 && this.newestDeliveredWhileServing) {
      const newest = this.newestDeliveredWhileServing.sequence;
      if (!this.taken.includes(newest)) problems.push(`idle with nothing pending, but the newest delivery (${newest}) was never taken by the worker`);
    }
    return problems;
  }

  cleanup(): void {
    this.actor.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
