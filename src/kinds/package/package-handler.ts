import type { CommandRunner } from '../../core/system/runner.js';
import { checkedOf, UNCHANGED, type Checked, type ConvergeContext, type HandlerShape, type ResourceHandler } from '../../engine/converge/handler-types.js';
import type { ResourceRecord } from '../../core/store/state.js';
import { PackageApply } from './package-apply.js';
import type { Decision } from './package-decide.js';
import { foundManager, type ManagerFor } from './package-managers.js';
import type { PackageResource } from './package-spec.js';

/**
 * Packages come first, before the accounts their scripts may make and the files and services that
 * need them; they go last, once the services and files that needed them have gone.
 */
export const PACKAGE_SHAPE: HandlerShape<PackageResource> = { target: (resource) => resource.name, removalRank: 4, applyRank: -3 };

/**
 * Packages through the machine's package manager: every package of a declaration in one transaction,
 * run at the first step that acts (each later step reads what it did), read back once after.
 */
export function packageHandler(runner: CommandRunner | undefined, managerFor: ManagerFor | undefined = runner && foundManager(runner)): ResourceHandler<PackageResource> {
  const applies = new WeakMap<ConvergeContext, PackageApply>();
  const of = (ctx: ConvergeContext, id: string): { apply: PackageApply; decision: Decision } => {
    const apply = applies.get(ctx);
    const decision = apply?.decisions.get(id);
    if (!apply || !decision) throw new Error('the packages were not read for this apply');
    return { apply, decision };
  };
  const step = async (subject: PackageResource | ResourceRecord, ctx: ConvergeContext, apply: boolean): Promise<Checked> => {
    const { apply: state, decision } = of(ctx, subject.id);
    const checked = (more: Omit<Checked, 'step' | 'verb'> = {}) => checkedOf(subject, decision.name, decision.verb, decision.changes, { ...(decision.detail ? { detail: decision.detail } : {}), ...more });
    if (decision.verb === 'none') return UNCHANGED;
    if (decision.problem !== undefined) return checked({ problem: decision.problem });
    if (!apply || decision.verb === 'hold') return checked();
    if (decision.op === undefined) {
      if (decision.keep === 'forget') ctx.store.forget(decision.resource);
      else state.record(decision, ctx);
      return checked();
    }
    const done = await state.run(ctx, decision.resource);
    if (done.failed !== undefined) return checked({ problem: done.failed });
    ctx.changed.add(decision.resource);
    return checked();
  };
  return {
    ...PACKAGE_SHAPE,
    async prepare(resources, removing, ctx) {
      if (!managerFor) return "no command runner is provided to run the machine's package manager with";
      const manager = await managerFor(ctx.fs.root);
      if (typeof manager === 'string') return manager;
      const state = new PackageApply(manager);
      await state.read(resources, removing, ctx);
      applies.set(ctx, state);
      return undefined;
    },
    converge: (resource, ctx, apply) => step(resource, ctx, apply),
    remove: (record, ctx, apply) => step(record, ctx, apply),
    verify: async (ctx) => applies.get(ctx)?.verify(),
  };
}
