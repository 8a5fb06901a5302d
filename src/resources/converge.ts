import type { Declaration, Resource } from '../declaration/schema.js';
import type { ResourceRecord } from '../store/state.js';
import { directoryHandler } from './directory.js';
import { fileHandler } from './file.js';
import { NO_ACTIONS, stepOf, type Checked, type ConvergeContext, type ResourceHandler, type Step, type StepResult } from './types.js';
import { pauseWhenDue } from '../system/yielder.js';

/** The handlers by resource type (directory and file here; the host adds services and archives). */
export type HandlerTable = Partial<{ [T in Resource['type']]: ResourceHandler<Extract<Resource, { type: T }>> }>;

export const BASE_HANDLERS: HandlerTable = { directory: directoryHandler, file: fileHandler };

/**
 * The check of every step, in the order they are applied: the removals of records first, then the
 * declaration's resources, each with its check at the same index. An unchanged resource's check is
 * the shared UNCHANGED: a no-op plan of 10,000 files holds no object per file.
 */
export interface Plan {
  removals: Array<{ record: ResourceRecord; checked: Checked }>;
  resources: Resource[];
  checks: Checked[];
  /** Steps that cannot be applied as the machine stands: the whole apply is refused. */
  problems: Array<{ resource: string; target: string; message: string }>;
}

function handlerFor(handlers: HandlerTable, type: Resource['type']): ResourceHandler {
  const handler = handlers[type] as ResourceHandler | undefined;
  if (!handler) throw new Error(`no handler for ${type} resources`);
  return handler;
}

/** Where a resource sits on the machine: a path, or a unit. */
export function targetOf(resource: Resource): string {
  return resource.type === 'service' ? resource.unit : resource.path;
}

/** What the store holds of one origin: how many records, and whether any is a service's. */
export interface Footprint {
  records: number;
  services: boolean;
}

/** One pass over the records (10,000 of them on a big host; a plain loop: it runs every apply). */
export function footprintOf(store: ConvergeContext['store'], origin: ConvergeContext['origin']): Footprint {
  const records = store.state.records;
  let count = 0;
  let services = false;
  for (const id in records) {
    const record = records[id]!;
    if (record.origin !== origin) continue;
    count += 1;
    if (record.type === 'service') services = true;
  }
  return { records: count, services };
}

/** Records this declaration lets go of: of its own origin, and no longer declared as they are. */
export function recordsToRemove(declaration: Declaration, ctx: Pick<ConvergeContext, 'store' | 'origin'>, footprint = footprintOf(ctx.store, ctx.origin)): ResourceRecord[] {
  const records = ctx.store.state.records;
  // Most applies let go of nothing: when as many records of this origin are still declared as they
  // are as the origin holds (ids are unique), none leaves, and no map of the declaration is made.
  let kept = 0;
  for (const r of declaration.resources) {
    const record = records[r.id];
    if (record !== undefined && record.origin === ctx.origin && record.type === r.type && record.target === targetOf(r)) kept += 1;
  }
  if (kept === footprint.records) return [];
  const declared = new Map<string, Resource>();
  for (const r of declaration.resources) declared.set(r.id, r);
  const leaving: ResourceRecord[] = [];
  for (const id in records) {
    const record = records[id]!;
    if (record.origin !== ctx.origin) continue;
    const now = declared.get(id);
    if (now === undefined || now.type !== record.type || targetOf(now) !== record.target) leaving.push(record);
  }
  // Services stop before their files go; what is inside a directory goes before the directory.
  const rank = (r: ResourceRecord) => (r.type === 'service' ? 0 : 1);
  return leaving.sort((a, b) => rank(a) - rank(b) || b.target.split('/').length - a.target.split('/').length || a.id.localeCompare(b.id));
}

/** The check alone, over removals first and then the declaration's order. Touches nothing. */
export async function planDeclaration(declaration: Declaration, ctx: ConvergeContext, handlers: HandlerTable, footprint?: Footprint): Promise<Plan> {
  const leaving = recordsToRemove(declaration, ctx, footprint);
  for (const record of leaving) ctx.removing.add(record.target);
  await prepareHandlers(declaration.resources, leaving, ctx, handlers);
  // The check of a large declaration is long synchronous work (lstat, compare): it yields between
  // resources every few milliseconds, so the daemon keeps answering.
  const pause = pauseWhenDue();
  const removals: Plan['removals'] = [];
  const problems: Plan['problems'] = [];
  for (const record of leaving) {
    const answer = handlerFor(handlers, record.type).remove(record, ctx, false);
    const checked = answer instanceof Promise ? await answer : answer;
    removals.push({ record, checked });
    if (checked.problem !== undefined) problems.push(problemOf(checked, stepOfRecord(record, checked)));
    const paused = pause();
    if (paused) await paused;
  }
  const resources = declaration.resources;
  const checks = new Array<Checked>(resources.length);
  for (let i = 0; i < resources.length; i++) {
    const resource = resources[i]!;
    const answer = handlerFor(handlers, resource.type).converge(resource, ctx, false);
    const checked = answer instanceof Promise ? await answer : answer;
    checks[i] = checked;
    if (checked.problem !== undefined) problems.push(problemOf(checked, stepOfResource(resource, checked)));
    const paused = pause();
    if (paused) await paused;
  }
  return { removals, resources, checks, problems };
}

const problemOf = (checked: Checked, step: Step) => ({ resource: step.resource, target: step.target, message: checked.problem! });

/** A removal's step as its check said it. */
const stepOfRecord = (record: ResourceRecord, checked: Checked): Step => checked.step ?? stepOf(record, record.target, NO_ACTIONS);

/** A resource's step as its check said it; made here, with no actions, for one found as declared. */
const stepOfResource = (resource: Resource, checked: Checked): Step => checked.step ?? stepOf(resource, targetOf(resource), NO_ACTIONS);

/** Each handler reads what it needs once, for all its resources (services: one batched unit query). */
async function prepareHandlers(resources: Resource[], removals: ResourceRecord[], ctx: ConvergeContext, handlers: HandlerTable): Promise<void> {
  for (const [type, handler] of Object.entries(handlers) as Array<[Resource['type'], ResourceHandler | undefined]>) {
    if (!handler?.prepare) continue;
    const mine = resources.filter((r) => r.type === type);
    const leaving = removals.filter((r) => r.type === type);
    if (mine.length > 0 || leaving.length > 0) await handler.prepare(mine, leaving, ctx);
  }
}

/** Every step of the plan, in order (made when asked for: the unchanged ones are made from their resources then). */
export function planSteps(plan: Plan): Step[] {
  const steps: Step[] = [];
  for (const { record, checked } of plan.removals) steps.push(stepOfRecord(record, checked));
  for (let i = 0; i < plan.resources.length; i++) steps.push(stepOfResource(plan.resources[i]!, plan.checks[i]!));
  return steps;
}

const statusOf = (checked: Checked): StepResult['status'] =>
  checked.verb === 'none' ? 'unchanged' : checked.verb === 'hold' ? 'held' : 'done';

export interface ApplyOutcome {
  /** The steps that did, failed, held, skipped or said something, in the plan's order. */
  changed: StepResult[];
  /** The steps found as declared and left so. */
  unchanged: number;
  /** Every step in the plan's order, the unchanged made from the plan when this is called. */
  steps(): StepResult[];
  error?: { resource: string; message: string };
}

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
export async function applyPlan(plan: Plan, ctx: ConvergeContext, handlers: HandlerTable): Promise<ApplyOutcome> {
  const removed = plan.removals.length;
  const total = removed + plan.resources.length;
  /** Results by the step's index (removals first); a hole is a step left unchanged without a word. */
  const results = new Array<StepResult | undefined>(total);
  const resultOf = new Map<string, StepResult>();
  const indexOfResource = (id: string) => {
    for (let i = 0; i < total; i++) if (stepAt(i).resource === id) return i;
    return -1;
  };
  const stepAt = (i: number): Step => (i < removed ? stepOfRecord(plan.removals[i]!.record, plan.removals[i]!.checked) : stepOfResourceAt(i - removed));
  const stepOfResourceAt = (i: number): Step => stepOfResource(plan.resources[i]!, plan.checks[i]!);
  const checkedAt = (i: number): Checked => (i < removed ? plan.removals[i]!.checked : plan.checks[i - removed]!);
  const resultAt = (i: number): StepResult => (results[i] ??= { ...stepAt(i), status: 'unchanged' });
  let error: ApplyOutcome['error'];
  let unchanged = 0;
  let changed = false;
  const planGeneration = ctx.fs.generation;
  const pause = pauseWhenDue();
  const commit = async () => {
    if (ctx.writes.empty) return;
    const { failed, amended } = await ctx.writes.commit();
    for (const [resource, amendment] of amended) {
      const step = resultOf.get(resource);
      if (step) Object.assign(step, amendment.actions ? { actions: amendment.actions } : {}, amendment.detail ? { detail: amendment.detail } : {});
    }
    for (const { resource, error: err } of failed) {
      const step = resultOf.get(resource);
      if (step) Object.assign(step, { status: 'failed', detail: err.message });
      error ??= { resource, message: err.message };
    }
  };
  for (let index = 0; index < total; index++) {
    const planned = checkedAt(index);
    const handler = handlerFor(handlers, index < removed ? plan.removals[index]!.record.type : plan.resources[index - removed]!.type);
    if (index > 0 && index === removed) await commit();
    if (error) {
      results[index] = { ...stepAt(index), status: 'skipped', detail: `skipped: ${error.resource} failed before it` };
      continue;
    }
    // Left as the plan found it: nothing has changed since, or nothing it depends on (a batched
    // handler's look stands until a batch commits).
    if ((planned.verb === 'none' || planned.verb === 'hold') && (!changed || (handler.batched === true && ctx.fs.generation === planGeneration))) {
      if (planned.remember) ctx.store.record(planned.remember);
      if (planned.verb === 'none' && planned.detail === undefined) unchanged += 1;
      else results[index] = { ...stepAt(index), status: statusOf(planned), ...(planned.detail ? { detail: planned.detail } : {}) };
      const paused = pause();
    if (paused) await paused;
      continue;
    }
    try {
      if (!handler.batched) await commit();
      if (error) {
        results[index] = { ...stepAt(index), status: 'skipped', detail: `skipped: ${(error as { resource: string }).resource} failed before it` };
        continue;
      }
      const answer = index < removed ? handler.remove(plan.removals[index]!.record, ctx, true) : handler.converge(plan.resources[index - removed]!, ctx, true, planned);
      const done = answer instanceof Promise ? await answer : answer;
      if (done.problem !== undefined) throw new Error(done.problem);
      if (done.remember) ctx.store.record(done.remember);
      if (done.verb === 'none' && done.detail === undefined && done.step === undefined) {
        unchanged += 1;
      } else {
        const step: StepResult = { ...(done.step ?? stepAt(index)), status: statusOf(done), ...(done.detail ? { detail: done.detail } : {}) };
        if (step.status === 'unchanged' && step.detail === undefined) unchanged += 1;
        else results[index] = step;
        resultOf.set(step.resource, step);
      }
      if (done.verb !== 'none' && done.verb !== 'hold') changed = true;
    } catch (err) {
      const message = (err as Error).message;
      error = { resource: stepAt(index).resource, message };
      results[index] = { ...stepAt(index), status: 'failed', detail: message };
      await commit();
    }
    if (ctx.writes.full) await commit();
    const paused = pause();
    if (paused) await paused;
  }
  await commit();
  // Checks that need the steps done first (the services' second look) run even after a failure:
  // the units acted on before it are on the machine either way, and the report must say how they are.
  for (const handler of new Set(Object.values(handlers))) {
    for (const failure of (await handler?.verify?.(ctx)) ?? []) {
      const index = indexOfResource(failure.resource);
      if (index >= 0) {
        if (results[index] === undefined) unchanged -= 1;
        Object.assign(resultAt(index), { status: 'failed', detail: failure.message });
      }
      error ??= { resource: failure.resource, message: failure.message };
    }
  }
  const changedSteps: StepResult[] = [];
  for (const result of results) if (result !== undefined) changedSteps.push(result);
  const outcome: ApplyOutcome = {
    changed: changedSteps,
    unchanged,
    steps: () => {
      const all: StepResult[] = new Array(total);
      for (let i = 0; i < total; i++) all[i] = resultAt(i);
      return all;
    },
  };
  return error ? { ...outcome, error } : outcome;
}
