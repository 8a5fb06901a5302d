import type { CommandRunner } from '../../core/system/runner.js';
import type { ResourceRecord } from '../../core/store/state.js';
import { CREATE, HOLD, REMOVE, TAKE, type Change } from '../../engine/converge/changes.js';
import { checkedOf, UNCHANGED, type Checked, type ConvergeContext, type HandlerShape, type ResourceHandler } from '../../engine/converge/handler-types.js';
import { foundVerdict, HELD_REASON, ownRecord } from '../../engine/converge/ownership.js';
import { idRange, nextFreeId } from './account-tables.js';
import { accountApplies, type AccountApply } from './account-apply.js';
import { act } from './account-tools.js';
import type { GroupResource } from './group-spec.js';

/** Groups are made before the users that name them (and those before the files they own); they go after their users. */
export const GROUP_SHAPE: HandlerShape<GroupResource> = { target: (resource) => resource.name, removalRank: 3, applyRank: -2 };

const gidChange = (from: number | undefined, to: number): Change => ({ kind: 'field', field: 'gid', from: from === undefined ? '' : String(from), to: String(to) });

/** The gid a group to be made gets: the declared one, or the one the plan promised, or the next free one. */
function gidFor(resource: GroupResource, state: AccountApply, root: string): number | string {
  const promised = state.promised.get(resource.name);
  if (promised !== undefined) return promised;
  const used = [...state.tables.groups.values()].map((g) => g.gid);
  if (resource.gid !== undefined) {
    const holder = [...state.tables.groups.values()].find((g) => g.gid === resource.gid);
    return holder ? `gid ${resource.gid} is group ${holder.name}'s on this machine` : resource.gid;
  }
  return nextFreeId(used, idRange(root, 'GID', resource.system === true), resource.system === true, state.taken) ?? `no free gid in the ${resource.system ? 'system ' : ''}range`;
}

/**
 * A group of the machine, through groupadd, groupmod and groupdel. One found there and not made by the
 * host is held on an adopted machine (taken when the declaration says so, or on a converged one): a
 * taken group's gid is given back when it is no longer declared; a group the host made is deleted.
 */
export function groupHandler(runner: CommandRunner | undefined): ResourceHandler<GroupResource> {
  const applies = accountApplies(runner, 'group');
  return {
    ...GROUP_SHAPE,
    prepare: (_resources, _removing, ctx) => applies.prepare(ctx),
    async converge(resource, ctx, apply): Promise<Checked> {
      const state = applies.of(ctx);
      const { name } = resource;
      const checked = (verb: Checked['verb'], changes: Change[], more?: Omit<Checked, 'step' | 'verb'>) => checkedOf(resource, name, verb, changes, more);
      const found = state.tables.groups.get(name);
      if (!found) {
        const gid = gidFor(resource, state, ctx.fs.root);
        if (typeof gid === 'string') return checked('none', [], { problem: gid });
        state.promised.set(name, gid);
        state.taken.add(gid);
        ctx.accounts.learn('group', name, gid);
        if (apply) {
          const failed = await act(() => state.tools.run('groupadd', [...(resource.system ? ['--system'] : []), '--gid', String(gid), name]));
          if (failed) return checked('create', [CREATE], { problem: failed });
          ctx.store.record(recordOf(resource, ctx, true, { gid }));
          state.acted.set(name, { resource: resource.id, id: gid });
          ctx.changed.add(resource.id);
        }
        return checked('create', [CREATE, gidChange(undefined, gid)]);
      }
      ctx.accounts.learn('group', name, found.gid);
      const want = resource.gid ?? found.gid;
      const drift = want !== found.gid ? [gidChange(found.gid, want)] : [];
      const record = ownRecord(ctx, resource.id, 'group', name);
      if (!record && foundVerdict(resource, ctx) === 'hold') return checked('hold', [HOLD], { detail: HELD_REASON });
      if (record && drift.length === 0) return UNCHANGED;
      if (apply) {
        if (drift.length > 0) {
          const failed = await act(() => state.tools.run('groupmod', ['--gid', String(want), name]));
          if (failed) return checked(record ? 'update' : 'take', drift, { problem: failed });
          ctx.accounts.learn('group', name, want);
          ctx.changed.add(resource.id);
        }
        const original = record ? record.unixGroup?.original : { gid: found.gid };
        ctx.store.record(recordOf(resource, ctx, record?.created ?? false, { gid: want, ...(original ? { original } : {}) }));
        state.acted.set(name, { resource: resource.id, id: want });
      }
      return record ? checked('update', drift) : checked('take', [TAKE, ...drift], { detail: 'found here; taken over, its gid kept to give back' });
    },
    async remove(record, ctx, apply): Promise<Checked> {
      const state = applies.of(ctx);
      const name = record.target;
      const checked = (changes: Change[], more?: Omit<Checked, 'step' | 'verb'>) => checkedOf(record, name, 'remove', changes, more);
      const found = state.tables.groups.get(name);
      if (!found) {
        if (apply) ctx.store.forget(record.id);
        return checked([REMOVE], { detail: 'already gone' });
      }
      const original = record.unixGroup?.original;
      if (!record.created) {
        const giveBack = original !== undefined && original.gid !== found.gid;
        if (apply) {
          const failed = giveBack ? await act(() => state.tools.run('groupmod', ['--gid', String(original.gid), name])) : undefined;
          if (failed) return checked([REMOVE], { problem: failed });
          ctx.store.forget(record.id);
          if (giveBack) state.acted.set(name, { resource: record.id, id: original.gid });
        }
        return checked([REMOVE, ...(giveBack ? [{ kind: 'give-back' as const, what: 'original' as const }] : [])], { detail: 'taken over: left in place, with the gid it was found with' });
      }
      if (apply) {
        const failed = await act(() => state.tools.run('groupdel', [name]));
        if (failed) return checked([REMOVE], { problem: failed });
        ctx.store.forget(record.id);
        state.acted.set(name, { resource: record.id, gone: true });
      }
      return checked([REMOVE]);
    },
    verify: (ctx) => applies.verify(ctx, (tables) => tables.groups, (entry) => entry.gid),
  };
}

function recordOf(resource: GroupResource, ctx: ConvergeContext, created: boolean, unixGroup: NonNullable<ResourceRecord['unixGroup']>): ResourceRecord {
  return { id: resource.id, type: 'group', target: resource.name, origin: ctx.origin, created, unixGroup, appliedAt: ctx.now() };
}
