import type { Declaration, Resource } from '../declaration/schema.js';
import type { ResourceRecord } from '../store/state.js';
import { directoryHandler } from './directory.js';
import { fileHandler } from './file.js';
import type { Checked, ConvergeContext, ResourceHandler, Step, StepResult } from './types.js';
import { yielder } from './yielder.js';

/** The handlers by resource type (directory and file here; the host adds services and archives). */
export type HandlerTable = Partial<{ [T in Resource['type']]: ResourceHandler<Extract<Resource, { type: T }>> }>;

export const BASE_HANDLERS: HandlerTable = { directory: directoryHandler, file: fileHandler };

/** One planned step and how to carry it out: a removal of a record, or a declared resource. */
export type PlanItem =
  | { kind: 'remove'; record: ResourceRecord; checked: Checked }
  | { kind: 'resource'; resource: Resource; checked: Checked };

export interface Plan {
  items: PlanItem[];
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

/** Records this declaration lets go of: of its own origin, and no longer declared as they are. */
export function recordsToRemove(declaration: Declaration, ctx: Pick<ConvergeContext, 'store' | 'origin'>): ResourceRecord[] {
  const declared = new Map<string, Resource>();
  for (const r of declaration.resources) declared.set(r.id, r);
  const leaving: ResourceRecord[] = [];
  const records = ctx.store.state.records;
  // A plain loop: this runs over every record of every apply, 10,000 of them on a big host.
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
export async function planDeclaration(declaration: Declaration, ctx: ConvergeContext, handlers: HandlerTable): Promise<Plan> {
  const items: PlanItem[] = [];
  const removals = recordsToRemove(declaration, ctx);
  for (const record of removals) ctx.removing.add(record.target);
  await prepareHandlers(declaration.resources, removals, ctx, handlers);
  // The check of a large declaration is long synchronous work (lstat, compare): it yields between
  // resources every few milliseconds, so the daemon keeps answering.
  const pause = yielder();
  for (const record of removals) {
    items.push({ kind: 'remove', record, checked: await handlerFor(handlers, record.type).remove(record, ctx, false) });
    await pause();
  }
  for (const resource of declaration.resources) {
    items.push({ kind: 'resource', resource, checked: await handlerFor(handlers, resource.type).converge(resource, ctx, false) });
    await pause();
  }
  const problems = items
    .filter((item) => item.checked.problem !== undefined)
    .map((item) => ({ resource: item.checked.step.resource, target: item.checked.step.target, message: item.checked.problem! }));
  return { items, problems };
}

/** Each handler reads what it needs once, for all its resources (services: one batched unit query). */
async function prepareHandlers(resources: Resource[], removals: ResourceRecord[], ctx: ConvergeContext, handlers: HandlerTable): Promise<void> {
  for (const [type, handler] of Object.entries(handlers) as Array<[Resource['type'], ResourceHandler | undefined]>) {
    if (!handler?.prepare) continue;
    const mine = resources.filter((r) => r.type === type);
    const leaving = removals.filter((r) => r.type === type);
    if (mine.length > 0 || leaving.length > 0) await handler.prepare(mine, leaving, ctx);
  }
}

export function planSteps(plan: Plan): Step[] {
  return plan.items.map((item) => item.checked.step);
}

const statusOf = (checked: Checked): StepResult['status'] =>
  checked.verb === 'none' ? 'unchanged' : checked.verb === 'hold' ? 'held' : 'done';

export interface ApplyOutcome {
  steps: StepResult[];
  error?: { resource: string; message: string };
}

/**
 * Carries a plan out in its order. A step is checked again just before it is applied, unless nothing
 * has changed since the plan looked (the no-op path reads the machine once). Handlers stage their
 * writes in ctx.writes; the batch is committed when it is full, before a handler that does not write
 * through it, after the removals (a path removed is gone before anything is made there) and at the
 * end. A failure stops the apply: the batch staged so far is committed, every later step is reported
 * skipped, by name. A write that fails at commit fails its own step.
 */
export async function applyPlan(plan: Plan, ctx: ConvergeContext, handlers: HandlerTable): Promise<ApplyOutcome> {
  const steps: StepResult[] = [];
  const stepOfResource = new Map<string, StepResult>();
  let error: ApplyOutcome['error'];
  let changed = false;
  const pause = yielder();
  const commit = async () => {
    if (ctx.writes.empty) return;
    const { failed, amended } = await ctx.writes.commit();
    for (const [resource, amendment] of amended) {
      const step = stepOfResource.get(resource);
      if (step) Object.assign(step, amendment.actions ? { actions: amendment.actions } : {}, amendment.detail ? { detail: amendment.detail } : {});
    }
    for (const { resource, error: err } of failed) {
      const step = stepOfResource.get(resource);
      if (step) Object.assign(step, { status: 'failed', detail: err.message });
      error ??= { resource, message: err.message };
    }
  };
  for (const [index, item] of plan.items.entries()) {
    const planned = item.checked;
    if (index > 0 && item.kind === 'resource' && plan.items[index - 1]!.kind === 'remove') await commit();
    if (error) {
      steps.push({ ...planned.step, status: 'skipped', detail: `skipped: ${error.resource} failed before it` });
      continue;
    }
    if (!changed && (planned.verb === 'none' || planned.verb === 'hold')) {
      if (planned.remember) ctx.store.record(planned.remember);
      steps.push({ ...planned.step, status: statusOf(planned), ...(planned.detail ? { detail: planned.detail } : {}) });
      await pause();
      continue;
    }
    try {
      const handler = handlerFor(handlers, item.kind === 'remove' ? item.record.type : item.resource.type);
      if (!handler.batched) await commit();
      if (error) {
        steps.push({ ...planned.step, status: 'skipped', detail: `skipped: ${(error as { resource: string }).resource} failed before it` });
        continue;
      }
      const done = item.kind === 'remove' ? await handler.remove(item.record, ctx, true) : await handler.converge(item.resource, ctx, true, planned);
      if (done.problem !== undefined) throw new Error(done.problem);
      if (done.remember) ctx.store.record(done.remember);
      const step: StepResult = { ...done.step, status: statusOf(done), ...(done.detail ? { detail: done.detail } : {}) };
      steps.push(step);
      stepOfResource.set(step.resource, step);
      if (done.verb !== 'none' && done.verb !== 'hold') changed = true;
    } catch (err) {
      const message = (err as Error).message;
      error = { resource: planned.step.resource, message };
      steps.push({ ...planned.step, status: 'failed', detail: message });
      await commit();
    }
    if (ctx.writes.full) await commit();
    await pause();
  }
  await commit();
  // Checks that need the steps done first (the services' second look) run even after a failure:
  // the units acted on before it are on the machine either way, and the report must say how they are.
  for (const handler of new Set(Object.values(handlers))) {
    for (const failure of (await handler?.verify?.(ctx)) ?? []) {
      const step = steps.find((s) => s.resource === failure.resource);
      if (step) Object.assign(step, { status: 'failed', detail: failure.message });
      error ??= { resource: failure.resource, message: failure.message };
    }
  }
  return error ? { steps, error } : { steps };
}
