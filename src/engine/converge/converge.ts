import type { Subject } from '../../core/system/errors.js';
import type { Declaration, Resource } from '../../core/declaration/schema.js';
import type { ResourceRecord } from '../../core/store/state.js';
import { NO_CHANGES } from './changes.js';
import { PATH_RANK, stepOf, type Checked, type ConvergeContext, type ResourceHandler, type Step } from './handler-types.js';
import { pauseWhenDue } from '../../core/system/yielder.js';

/** The handlers by resource type: the engine reaches a kind only through this table, which it is given. */
export type HandlerTable = Partial<{ [T in Resource['type']]: ResourceHandler<Extract<Resource, { type: T }>> }>;

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
  problems: Array<{ resource: string; target: string; message: string; subject?: Subject }>;
  /** Why nothing of it can be applied (a handler's prepare said: no service manager here); nothing was checked. */
  refused?: string;
  /** The handlers that made it, and that carry it out. */
  handlers: HandlerTable;
}

export function handlerFor(handlers: HandlerTable, type: Resource['type']): ResourceHandler {
  const handler = handlers[type] as ResourceHandler | undefined;
  if (!handler) throw new Error(`no handler for ${type} resources`);
  return handler;
}

/** Where a resource sits on the machine, as its kind's handler says (a path, a unit). */
export function targetOf(resource: Resource, handlers: HandlerTable): string {
  return handlerFor(handlers, resource.type).target(resource);
}

/** How many records the store holds of one origin (10,000 on a big host; a plain loop: it runs every apply). */
function recordsOf(store: ConvergeContext['store'], origin: ConvergeContext['origin']): number {
  const records = store.state.records;
  let count = 0;
  for (const id in records) if (records[id]!.origin === origin) count += 1;
  return count;
}

/** Records this declaration lets go of: of its own origin, and no longer declared as they are. */
export function recordsToRemove(declaration: Declaration, ctx: Pick<ConvergeContext, 'store' | 'origin'>, handlers: HandlerTable): ResourceRecord[] {
  const records = ctx.store.state.records;
  // Most applies let go of nothing: when as many records of this origin are still declared as they
  // are as the origin holds (ids are unique), none leaves, and no map of the declaration is made.
  let kept = 0;
  for (const r of declaration.resources) {
    const record = records[r.id];
    if (record !== undefined && record.origin === ctx.origin && record.type === r.type && record.target === targetOf(r, handlers)) kept += 1;
  }
  if (kept === recordsOf(ctx.store, ctx.origin)) return [];
  const declared = new Map<string, Resource>();
  for (const r of declaration.resources) declared.set(r.id, r);
  const leaving: ResourceRecord[] = [];
  for (const id in records) {
    const record = records[id]!;
    if (record.origin !== ctx.origin) continue;
    const now = declared.get(id);
    if (now === undefined || now.type !== record.type || targetOf(now, handlers) !== record.target) leaving.push(record);
  }
  // Each kind's rank first (services stop before their files go); what is inside a directory goes before the directory.
  const rank = (r: ResourceRecord) => handlerFor(handlers, r.type).removalRank;
  return leaving.sort((a, b) => rank(a) - rank(b) || b.target.split('/').length - a.target.split('/').length || a.id.localeCompare(b.id));
}

/** The check alone, over removals first and then the declaration's order. Touches nothing. */
export async function planDeclaration(declaration: Declaration, ctx: ConvergeContext, handlers: HandlerTable): Promise<Plan> {
  ctx.declaredDirectories = new Set(declaration.resources.flatMap((r) => (r.type === 'directory' ? [r.path] : [])));
  const leaving = recordsToRemove(declaration, ctx, handlers);
  for (const record of leaving) ctx.removing.add(record.target);
  const refused = await prepareHandlers(declaration.resources, leaving, ctx, handlers);
  if (refused !== undefined) return { removals: [], resources: [], checks: [], problems: [], refused, handlers };
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
  const resources = inApplyOrder(declaration.resources, handlers);
  const checks = new Array<Checked>(resources.length);
  for (let i = 0; i < resources.length; i++) {
    const resource = resources[i]!;
    const answer = handlerFor(handlers, resource.type).converge(resource, ctx, false);
    const checked = answer instanceof Promise ? await answer : answer;
    checks[i] = checked;
    if (checked.problem !== undefined) problems.push(problemOf(checked, stepOfResource(resource, checked, handlers)));
    const paused = pause();
    if (paused) await paused;
  }
  return { removals, resources, checks, problems, handlers };
}

/**
 * The declared resources in the order they are checked and applied: each kind's apply rank first
 * (accounts before the files they own), the declaration's order within a rank. The declaration itself,
 * not a copy, when every resource has the same rank (a declaration of files alone).
 */
export function inApplyOrder(resources: Resource[], handlers: HandlerTable): Resource[] {
  const rank = (r: Resource) => handlerFor(handlers, r.type).applyRank ?? PATH_RANK;
  const first = resources.length > 0 ? rank(resources[0]!) : PATH_RANK;
  if (resources.every((r) => rank(r) === first)) return resources;
  return resources.map((r, i) => ({ r, i, rank: rank(r) })).sort((a, b) => a.rank - b.rank || a.i - b.i).map(({ r }) => r);
}

const problemOf = (checked: Checked, step: Step) => ({ resource: step.resource, target: step.target, message: checked.problem!, ...(checked.subject ? { subject: checked.subject } : {}) });

/** A removal's step as its check said it. */
export const stepOfRecord = (record: ResourceRecord, checked: Checked): Step => checked.step ?? stepOf(record, record.target, 'none', NO_CHANGES);

/** A resource's step as its check said it; made here, with no changes, for one found as declared. */
export const stepOfResource = (resource: Resource, checked: Checked, handlers: HandlerTable): Step => checked.step ?? stepOf(resource, targetOf(resource, handlers), 'none', NO_CHANGES);

/**
 * Each handler reads what it needs once, for all its resources (services: one batched unit query); the
 * first that says the apply cannot go on refuses it.
 */
async function prepareHandlers(resources: Resource[], removals: ResourceRecord[], ctx: ConvergeContext, handlers: HandlerTable): Promise<string | undefined> {
  for (const [type, handler] of Object.entries(handlers) as Array<[Resource['type'], ResourceHandler | undefined]>) {
    if (!handler?.prepare) continue;
    const mine = resources.filter((r) => r.type === type);
    const leaving = removals.filter((r) => r.type === type);
    if (mine.length === 0 && leaving.length === 0) continue;
    const refused = await handler.prepare(mine, leaving, ctx);
    if (refused !== undefined) return refused;
  }
  return undefined;
}

/** Every step of the plan, in order (made when asked for: the unchanged ones are made from their resources then). */
export function planSteps(plan: Plan): Step[] {
  const steps: Step[] = [];
  for (const { record, checked } of plan.removals) steps.push(stepOfRecord(record, checked));
  for (let i = 0; i < plan.resources.length; i++) steps.push(stepOfResource(plan.resources[i]!, plan.checks[i]!, plan.handlers));
  return steps;
}

/**
 * The steps that change something, in the plan's order, without making a step for each resource found
 * as declared: what a printed plan lists (its count of all steps is the plan's length).
 */
/** Whether carrying the plan out would act on the machine: a step that neither finds its resource as declared nor holds it. */
export function touchesMachine(plan: Plan): boolean {
  const acts = (checked: Checked) => checked.verb !== 'none' && checked.verb !== 'hold';
  return plan.removals.some(({ checked }) => acts(checked)) || plan.checks.some(acts);
}

export function changingSteps(plan: Plan): Step[] {
  const steps: Step[] = [];
  for (const { record, checked } of plan.removals) if (checked.step !== undefined && checked.step.changes.length > 0) steps.push(stepOfRecord(record, checked));
  for (let i = 0; i < plan.resources.length; i++) {
    const checked = plan.checks[i]!;
    if (checked.step !== undefined && checked.step.changes.length > 0) steps.push(stepOfResource(plan.resources[i]!, checked, plan.handlers));
  }
  return steps;
}
