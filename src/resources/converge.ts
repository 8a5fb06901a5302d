import type { Declaration, Resource } from '../declaration/schema.js';
import type { ResourceRecord } from '../store/state.js';
import { queryUnits } from '../services/runtime.js';
import { directoryHandler } from './directory.js';
import { fileHandler } from './file.js';
import type { Checked, ConvergeContext, ResourceHandler, Step, StepResult } from './types.js';

/** The handlers by resource type. Archive and service handlers join as their issues land. */
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
  // Every unit the apply needs, in one batched read of the service manager.
  const units = [...removals.filter((r) => r.type === 'service').map((r) => r.target), ...declaration.resources.flatMap((r) => (r.type === 'service' ? [r.unit] : []))];
  if (ctx.services && units.length > 0) await queryUnits(ctx.services, units);
  for (const record of removals) {
    items.push({ kind: 'remove', record, checked: await handlerFor(handlers, record.type).remove(record, ctx, false) });
  }
  for (const resource of declaration.resources) {
    items.push({ kind: 'resource', resource, checked: await handlerFor(handlers, resource.type).converge(resource, ctx, false) });
  }
  const problems = items
    .filter((item) => item.checked.problem !== undefined)
    .map((item) => ({ resource: item.checked.step.resource, target: item.checked.step.target, message: item.checked.problem! }));
  return { items, problems };
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
 * has changed since the plan looked (the no-op path reads the machine once). The first failure stops
 * the apply: every later step is reported skipped, by name.
 */
export async function applyPlan(plan: Plan, ctx: ConvergeContext, handlers: HandlerTable): Promise<ApplyOutcome> {
  const steps: StepResult[] = [];
  let error: ApplyOutcome['error'];
  let changed = false;
  for (const item of plan.items) {
    const planned = item.checked;
    if (error) {
      steps.push({ ...planned.step, status: 'skipped', detail: `skipped: ${error.resource} failed before it` });
      continue;
    }
    if (!changed && (planned.verb === 'none' || planned.verb === 'hold')) {
      steps.push({ ...planned.step, status: statusOf(planned), ...(planned.detail ? { detail: planned.detail } : {}) });
      continue;
    }
    try {
      const handler = handlerFor(handlers, item.kind === 'remove' ? item.record.type : item.resource.type);
      const done = item.kind === 'remove' ? await handler.remove(item.record, ctx, true) : await handler.converge(item.resource, ctx, true);
      if (done.problem !== undefined) throw new Error(done.problem);
      steps.push({ ...done.step, status: statusOf(done), ...(done.detail ? { detail: done.detail } : {}) });
      if (done.verb !== 'none' && done.verb !== 'hold') changed = true;
    } catch (err) {
      const message = (err as Error).message;
      error = { resource: planned.step.resource, message };
      steps.push({ ...planned.step, status: 'failed', detail: message });
    }
  }
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
