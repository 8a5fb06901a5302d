import type { CommandRunner } from '../../core/system/runner.js';
import type { ResourceRecord } from '../../core/store/state.js';
import { CREATE, HOLD, REMOVE, TAKE, type Change } from '../../engine/converge/changes.js';
import { checkedOf, UNCHANGED, type Checked, type ConvergeContext, type HandlerShape, type ResourceHandler } from '../../engine/converge/handler-types.js';
import { foundVerdict, HELD_REASON, ownRecord } from '../../engine/converge/ownership.js';
import { idRange, nextFreeId, type AccountTables, type PasswdEntry } from '../group/account-tables.js';
import { accountApplies, type AccountApply } from '../group/account-apply.js';
import { act } from '../group/account-tools.js';
import type { AccountChange } from '../group/group-spec.js';
import type { UserKept, UserResource } from './user-spec.js';

/** Users are made after their groups and before the files they own; they go before their groups. */
export const USER_SHAPE: HandlerShape<UserResource> = { target: (resource) => resource.name, removalRank: 2, applyRank: -1 };

type Original = NonNullable<NonNullable<UserKept['unixUser']>['original']>;

/** A user as it stands: its entry, its other groups, its hash. */
interface Found extends PasswdEntry {
  groups: string[];
  hash: string | undefined;
}

function foundUser(tables: AccountTables, name: string): Found | undefined {
  const entry = tables.users.get(name);
  if (!entry) return undefined;
  const groups = [...tables.groups.values()].filter((g) => g.members.includes(name)).map((g) => g.name).sort();
  return { ...entry, groups, hash: tables.hashes.get(name) };
}

/** The gid a primary group names: a number, or a group of the tables or one this apply makes (the accounts learnt it). */
function gidOf(group: string | number, state: AccountApply, ctx: ConvergeContext): number | undefined {
  if (typeof group === 'number') return group;
  return state.tables.groups.get(group)?.gid ?? ctx.accounts.gid(group);
}

/** The uid a user to be made gets: the declared one, or the one the plan promised, or the next free one. */
function uidFor(resource: UserResource, state: AccountApply, root: string): number | string {
  const promised = state.promised.get(resource.name);
  if (promised !== undefined) return promised;
  if (resource.uid !== undefined) {
    const holder = [...state.tables.users.values()].find((u) => u.uid === resource.uid);
    return holder ? `uid ${resource.uid} is user ${holder.name}'s on this machine` : resource.uid;
  }
  const used = [...state.tables.users.values()].map((u) => u.uid);
  return nextFreeId(used, idRange(root, 'UID', resource.system === true), resource.system === true, state.taken) ?? `no free uid in the ${resource.system ? 'system ' : ''}range`;
}

const field = (name: string, from: string | number | undefined, to: string | number): AccountChange => ({ kind: 'field', field: name, from: from === undefined ? '' : String(from), to: String(to) });

/** What differs between a user found and the user declared, as changes and as the usermod flags that mend them. */
function driftOf(resource: UserResource, found: Found, gid: number | undefined): { changes: Change[]; flags: string[] } {
  const changes: Change[] = [];
  const flags: string[] = [];
  const differs = (name: string, flag: string, from: string | number, to: string | number | undefined) => {
    if (to === undefined || to === from) return;
    changes.push(field(name, from, to));
    flags.push(flag, String(to));
  };
  differs('uid', '--uid', found.uid, resource.uid);
  differs('gid', '--gid', found.gid, gid);
  differs('comment', '--comment', found.comment, resource.comment);
  differs('home', '--home', found.home, resource.home);
  differs('shell', '--shell', found.shell, resource.shell);
  if (resource.groups !== undefined) {
    const want = [...resource.groups].sort();
    const added = want.filter((g) => !found.groups.includes(g));
    const removed = found.groups.filter((g) => !want.includes(g));
    if (added.length + removed.length > 0) {
      changes.push({ kind: 'groups', added, removed });
      flags.push('--groups', want.join(','));
    }
  }
  if (resource.password !== undefined && resource.password.hashed !== found.hash) {
    changes.push({ kind: 'password' });
    flags.push('--password', resource.password.hashed);
  }
  return { changes, flags };
}

/** useradd's flags for a user declared: its uid, group, other groups, GECOS, home, shell, password. */
function addFlags(resource: UserResource, uid: number, gid: number | undefined, state: AccountApply): string[] {
  const flags = [...(resource.system ? ['--system'] : ['--create-home']), '--uid', String(uid)];
  if (gid !== undefined) flags.push('--gid', String(gid));
  else if (state.tables.groups.has(resource.name)) flags.push('--gid', resource.name);
  else flags.push('--user-group');
  if (resource.groups?.length) flags.push('--groups', resource.groups.join(','));
  if (resource.comment !== undefined) flags.push('--comment', resource.comment);
  if (resource.home !== undefined) flags.push('--home-dir', resource.home);
  if (resource.shell !== undefined) flags.push('--shell', resource.shell);
  if (resource.password !== undefined) flags.push('--password', resource.password.hashed);
  return flags;
}

/** A password given to a tool is never said: what a failed tool printed of its command line leaves it out. */
const hidden = (message: string, resource: UserResource) => (resource.password ? message.replaceAll(resource.password.hashed, '(hashed password)') : message);

/**
 * A user of the machine, through useradd, usermod and userdel. One found there and not made by the host
 * is held on an adopted machine (taken when the declaration says so, or on a converged one): a taken
 * user's entry is given back when it is no longer declared; a user the host made is deleted, its home
 * left in place (what a person kept there is never the host's to remove).
 */
export function userHandler(runner: CommandRunner | undefined): ResourceHandler<UserResource> {
  const applies = accountApplies(runner, 'user');
  return {
    ...USER_SHAPE,
    prepare: (_resources, _removing, ctx) => applies.prepare(ctx),
    async converge(resource, ctx, apply): Promise<Checked> {
      const state = applies.of(ctx);
      const { name } = resource;
      const checked = (verb: Checked['verb'], changes: Change[], more?: Omit<Checked, 'step' | 'verb'>) => checkedOf(resource, name, verb, changes, more);
      const gid = resource.group === undefined ? undefined : gidOf(resource.group, state, ctx);
      if (resource.group !== undefined && gid === undefined) return checked('none', [], { problem: `group '${resource.group}' does not exist on this machine and is not declared` });
      const found = foundUser(state.tables, name);
      if (!found) {
        const uid = uidFor(resource, state, ctx.fs.root);
        if (typeof uid === 'string') return checked('none', [], { problem: uid });
        state.promised.set(name, uid);
        state.taken.add(uid);
        ctx.accounts.learn('user', name, uid);
        if (apply) {
          const failed = await act(() => state.tools.run('useradd', [...addFlags(resource, uid, gid, state), name]));
          if (failed) return checked('create', [CREATE], { problem: hidden(failed, resource) });
          ctx.store.record(recordOf(resource, ctx, true, { uid }));
          state.acted.set(name, { resource: resource.id, id: uid });
          ctx.changed.add(resource.id);
        }
        return checked('create', [CREATE, field('uid', undefined, uid), ...(resource.password ? [{ kind: 'password' as const }] : [])]);
      }
      ctx.accounts.learn('user', name, resource.uid ?? found.uid);
      const { changes, flags } = driftOf(resource, found, gid);
      const record = ownRecord(ctx, resource.id, 'user', name);
      if (!record && foundVerdict(resource, ctx) === 'hold') return checked('hold', [HOLD], { detail: HELD_REASON });
      if (record && changes.length === 0) return UNCHANGED;
      if (apply) {
        if (flags.length > 0) {
          const failed = await act(() => state.tools.run('usermod', [...flags, name]));
          if (failed) return checked(record ? 'update' : 'take', changes, { problem: hidden(failed, resource) });
          ctx.changed.add(resource.id);
        }
        const original: Original | undefined = record
          ? record.unixUser?.original
          : { uid: found.uid, gid: found.gid, comment: found.comment, home: found.home, shell: found.shell, groups: found.groups, ...(found.hash !== undefined ? { hash: found.hash } : {}) };
        const uid = resource.uid ?? found.uid;
        ctx.store.record(recordOf(resource, ctx, record?.created ?? false, { uid, ...(original ? { original } : {}) }));
        state.acted.set(name, { resource: resource.id, id: uid });
      }
      return record ? checked('update', changes) : checked('take', [TAKE, ...changes], { detail: 'found here; taken over, its entry kept to give back' });
    },
    async remove(record, ctx, apply): Promise<Checked> {
      const state = applies.of(ctx);
      const name = record.target;
      const checked = (changes: Change[], more?: Omit<Checked, 'step' | 'verb'>) => checkedOf(record, name, 'remove', changes, more);
      const found = foundUser(state.tables, name);
      if (!found) {
        if (apply) ctx.store.forget(record.id);
        return checked([REMOVE], { detail: 'already gone' });
      }
      if (!record.created) {
        const original = record.unixUser?.original;
        const back = original ? driftOf({ type: 'user', id: record.id, name, uid: original.uid, group: original.gid, groups: original.groups, comment: original.comment, home: original.home, shell: original.shell, ...(original.hash !== undefined ? { password: { hashed: original.hash } } : {}) }, found, original.gid) : { changes: [], flags: [] };
        if (apply) {
          const failed = back.flags.length > 0 ? await act(() => state.tools.run('usermod', [...back.flags, name])) : undefined;
          if (failed) return checked([REMOVE], { problem: original?.hash ? failed.replaceAll(original.hash, '(hashed password)') : failed });
          ctx.store.forget(record.id);
          if (back.flags.length > 0) state.acted.set(name, { resource: record.id, id: original!.uid });
        }
        return checked([REMOVE, ...(back.changes.length > 0 ? [{ kind: 'give-back' as const, what: 'original' as const }] : [])], { detail: 'taken over: left in place, with its entry as it was found' });
      }
      if (apply) {
        const failed = await act(() => state.tools.run('userdel', [name]));
        if (failed) return checked([REMOVE], { problem: failed });
        ctx.store.forget(record.id);
        state.acted.set(name, { resource: record.id, gone: true });
      }
      return checked([REMOVE], { detail: found.home ? `its home ${found.home} is left in place` : undefined });
    },
    verify: (ctx) => applies.verify(ctx, (tables) => tables.users, (entry) => entry.uid),
  };
}

function recordOf(resource: UserResource, ctx: ConvergeContext, created: boolean, unixUser: NonNullable<ResourceRecord['unixUser']>): ResourceRecord {
  return { id: resource.id, type: 'user', target: resource.name, origin: ctx.origin, created, unixUser, appliedAt: ctx.now() };
}
