import { faultOf, subjectOf, type Fault, type Subject } from '../../core/system/errors.js';
import { pauseWhenDue } from '../../core/system/yielder.js';
import { handlerFor, stepOfRecord, stepOfResource, type Plan } from './converge.js';
import type { Checked, ConvergeContext, ResourceHandler, Step, StepResult } from './handler-types.js';

export interface ApplyOutcome {
  /** The steps that did, failed, held, skipped or said something, in the plan's order. */
  changed: StepResult[];
  /** The steps found as declared and left so. */
  unchanged: number;
  /** Every step in the plan's order, the unchanged made from the plan when this is called. */
  steps(): StepResult[];
  /** What the handlers' looks after the steps said (the services' second look), for the report. */
  said: string[];
  /** `code`, `path`: what the system said of the write that failed (ENOSPC, EIO), when one did. */
  error?: { resource: string; message: string; subjects?: Subject[] } & Partial<Fault>;
}

const statusOf = (checked: Checked): StepResult['status'] =>
  checked.lock?.state === 'held' ? 'deferred' : checked.verb === 'none' ? 'unchanged' : checked.verb === 'hold' ? 'held' : 'done';

/** What a check or an apply said beside its step: its words, and what its lock did. */
const notesOf = (checked: Checked) => ({ ...(checked.detail ? { detail: checked.detail } : {}), ...(checked.lock ? { lock: checked.lock } : {}) });

/**
 * Carries a plan out in its order. A step is checked again just before it is applied, unless nothing
 * has changed since the plan looked (the no-op path reads the machine once). Handlers stage their
 * writes in ctx.writes; the batch is committed when it is full, before a handler that does not write
 * through it, after the removals (a path removed is gone before anything is made there) and at the
 * end. A failure stops the apply: the batch staged so far is committed, every later step is reported
 * skipped, by name. A write that fails at commit fails its own step.
 *
 * A step left unchanged gets no result object: its result is made from the plan only when every step
 * is asked for (the full report), so a no-op over 10,000 files makes none.
 */
export async function applyPlan(plan: Plan, ctx: ConvergeContext): Promise<ApplyOutcome> {
  const run = new PlanRun(plan, ctx);
  const pause = pauseWhenDue();
  for (let index = 0; index < run.total; index++) {
    if (index > 0 && index === run.removed) await run.commit();
    await run.step(index);
    if (ctx.writes.full) await run.commit();
    const paused = pause();
    if (paused) await paused;
  }
  await run.commit();
  await run.verify();
  return run.outcome();
}

/** One carrying-out of a plan: the results by step, the first error, what has changed so far. */
class PlanRun {
  readonly removed: number;
  readonly total: number;
  /** Results by the step's index (removals first); a hole is a step left unchanged without a word. */
  private readonly results: Array<StepResult | undefined>;
  private readonly resultOf = new Map<string, StepResult>();
  private readonly said: string[] = [];
  private error: ApplyOutcome['error'];
  private unchanged = 0;
  /** Something was applied: a later step's plan no longer stands unless its handler's look does. */
  private changed = false;
  private readonly planGeneration: number;

  constructor(private readonly plan: Plan, private readonly ctx: ConvergeContext) {
    this.removed = plan.removals.length;
    this.total = this.removed + plan.resources.length;
    this.results = new Array<StepResult | undefined>(this.total);
    this.planGeneration = ctx.fs.generation;
  }

  private stepAt(i: number): Step {
    const { plan, removed } = this;
    return i < removed ? stepOfRecord(plan.removals[i]!.record, plan.removals[i]!.checked) : stepOfResource(plan.resources[i - removed]!, plan.checks[i - removed]!, plan.handlers);
  }

  private checkedAt(i: number): Checked {
    return i < this.removed ? this.plan.removals[i]!.checked : this.plan.checks[i - this.removed]!;
  }

  private handlerAt(i: number): ResourceHandler {
    return handlerFor(this.plan.handlers, i < this.removed ? this.plan.removals[i]!.record.type : this.plan.resources[i - this.removed]!.type);
  }

  private resultAt(i: number): StepResult {
    return (this.results[i] ??= { ...this.stepAt(i), status: 'unchanged' });
  }

  private skip(index: number): void {
    this.results[index] = { ...this.stepAt(index), status: 'skipped', detail: `skipped: ${this.error!.resource} failed before it` };
  }

  /** Commits what is staged; a write that failed fails its own step, an amendment (a directory left) is said on it. */
  async commit(): Promise<void> {
    if (this.ctx.writes.empty) return;
    const { failed, amended } = await this.ctx.writes.commit();
    for (const [resource, amendment] of amended) {
      const step = this.resultOf.get(resource);
      if (step) Object.assign(step, amendment.verb ? { verb: amendment.verb } : {}, amendment.changes ? { changes: amendment.changes } : {}, amendment.detail ? { detail: amendment.detail } : {});
    }
    for (const { resource, error } of failed) {
      const step = this.resultOf.get(resource);
      if (step) Object.assign(step, { status: 'failed', detail: error.message });
      this.error ??= { resource, message: error.message, ...faultOf(error) };
    }
  }

  async step(index: number): Promise<void> {
    if (this.error) return this.skip(index);
    const planned = this.checkedAt(index);
    const handler = this.handlerAt(index);
    // Left as the plan found it: nothing has changed since, or nothing it depends on (a batched
    // handler's look stands until a batch commits).
    if ((planned.verb === 'none' || planned.verb === 'hold') && (!this.changed || (handler.batched === true && this.ctx.fs.generation === this.planGeneration))) {
      if (planned.remember) this.ctx.store.record(planned.remember);
      if (planned.verb === 'none' && planned.detail === undefined) this.unchanged += 1;
      else this.results[index] = { ...this.stepAt(index), status: statusOf(planned), ...notesOf(planned) };
      return;
    }
    try {
      if (!handler.batched) await this.commit();
      if (this.error) return this.skip(index);
      const answer = index < this.removed ? handler.remove(this.plan.removals[index]!.record, this.ctx, true) : handler.converge(this.plan.resources[index - this.removed]!, this.ctx, true, planned);
      this.done(index, answer instanceof Promise ? await answer : answer);
    } catch (err) {
      const message = (err as Error).message;
      const resource = this.stepAt(index).resource;
      const subject = subjectOf(err);
      this.error = { resource, message, ...faultOf(err), ...(subject ? { subjects: [{ resource, ...subject }] } : {}) };
      this.results[index] = { ...this.stepAt(index), status: 'failed', detail: message };
      await this.commit();
    }
  }

  /** What an applied step answered: its result, unless it found nothing to do and said nothing. */
  private done(index: number, done: Checked): void {
    if (done.problem !== undefined) throw new Error(done.problem);
    if (done.remember) this.ctx.store.record(done.remember);
    if (done.verb === 'none' && done.detail === undefined && done.step === undefined) {
      this.unchanged += 1;
    } else {
      const step: StepResult = { ...(done.step ?? this.stepAt(index)), status: statusOf(done), ...notesOf(done) };
      if (step.status === 'unchanged' && step.detail === undefined) this.unchanged += 1;
      else this.results[index] = step;
      this.resultOf.set(step.resource, step);
    }
    if (done.verb !== 'none' && done.verb !== 'hold' && done.lock?.state !== 'held') this.changed = true;
  }

  /**
   * Checks that need the steps done first (the services' second look) run even after a failure: the
   * units acted on before it are on the machine either way, and the report must say how they are.
   */
  async verify(): Promise<void> {
    for (const handler of new Set(Object.values(this.plan.handlers))) {
      const verified = await handler?.verify?.(this.ctx);
      if (verified === undefined) continue;
      this.said.push(...(verified.said ?? []));
      for (const failure of verified.failures) {
        const index = this.indexOfResource(failure.resource);
        if (index >= 0) {
          if (this.results[index] === undefined) this.unchanged -= 1;
          Object.assign(this.resultAt(index), { status: 'failed', detail: failure.message });
        }
        this.error ??= { resource: failure.resource, message: failure.message };
      }
    }
  }

  private indexOfResource(id: string): number {
    for (let i = 0; i < this.total; i++) if (this.stepAt(i).resource === id) return i;
    return -1;
  }

  outcome(): ApplyOutcome {
    const changed: StepResult[] = [];
    for (const result of this.results) if (result !== undefined) changed.push(result);
    const outcome: ApplyOutcome = {
      changed,
      unchanged: this.unchanged,
      said: this.said,
      steps: () => {
        const all: StepResult[] = new Array(this.total);
        for (let i = 0; i < this.total; i++) all[i] = this.resultAt(i);
        return all;
      },
    };
    return this.error ? { ...outcome, error: this.error } : outcome;
  }
}
