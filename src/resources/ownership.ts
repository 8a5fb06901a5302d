import type { Stats } from 'node:fs';
import type { DirectoryResource, FileResource } from '../declaration/schema.js';
import type { ResourceRecord } from '../store/state.js';
import type { Accounts } from './accounts.js';
import type { Checked, ConvergeContext, Look } from './types.js';
import type { Change } from './changes.js';
import { PathRefused } from './rooted-fs.js';

export interface Wanted {
  mode: number;
  uid: number;
  gid: number;
}

export const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, '0');

/**
 * The answers of wantedMeta by accounts, type, mode, owner and group: a declaration of 10,000 files
 * asks the same few questions 10,000 times. Keyed by the accounts passed in, which resolve a name
 * the same way for their whole life (they read the machine's tables once).
 */
const wantedByAccounts = new WeakMap<Accounts, Map<string, Map<string | undefined, Map<string | undefined, Map<string | undefined, Wanted | string>>>>>();

/** Mode, owner and group a resource asks for (defaults: root, 0644 files, 0755 directories); one answer for the same question. */
export function wantedMeta(resource: FileResource | DirectoryResource, accounts: Accounts): Wanted | string {
  let byType = wantedByAccounts.get(accounts);
  if (byType === undefined) wantedByAccounts.set(accounts, (byType = new Map()));
  const byMode = byType.get(resource.type) ?? new Map();
  const byOwner = byMode.get(resource.mode) ?? new Map();
  const byGroup = byOwner.get(resource.owner) ?? new Map();
  let answer = byGroup.get(resource.group);
  if (answer === undefined) {
    answer = resolveMeta(resource, accounts);
    byGroup.set(resource.group, answer);
    byOwner.set(resource.owner, byGroup);
    byMode.set(resource.mode, byOwner);
    byType.set(resource.type, byMode);
  }
  return answer;
}

function resolveMeta(resource: FileResource | DirectoryResource, accounts: Accounts): Wanted | string {
  const mode = parseInt(resource.mode ?? (resource.type === 'file' ? '0644' : '0755'), 8);
  const uid = accounts.uid(resource.owner ?? 'root');
  if (uid === undefined) return `owner '${resource.owner}' does not exist on this machine`;
  const gid = accounts.gid(resource.group ?? 'root');
  if (gid === undefined) return `group '${resource.group}' does not exist on this machine`;
  return Object.freeze({ mode, uid, gid });
}

/** Mode, owner and group are as wanted (metaDrift would say nothing), without making its list. */
export const metaMatches = (st: Stats, want: Wanted): boolean => (st.mode & 0o7777) === want.mode && st.uid === want.uid && st.gid === want.gid;

/** The drift of mode, owner and group, as changes (mode 0644 to 0640). */
export function metaDrift(st: Stats, want: Wanted, accounts: Accounts): Change[] {
  const changes: Change[] = [];
  if ((st.mode & 0o7777) !== want.mode) changes.push({ kind: 'mode', from: octal(st.mode), to: octal(want.mode) });
  if (st.uid !== want.uid) changes.push({ kind: 'owner', from: accounts.userName(st.uid), to: accounts.userName(want.uid) });
  if (st.gid !== want.gid) changes.push({ kind: 'group', from: accounts.groupName(st.gid), to: accounts.groupName(want.gid) });
  return changes;
}

/** Is the thing at this path ours: recorded under this id at this target? */
export function ownRecord(ctx: ConvergeContext, id: string, type: string, target: string): ResourceRecord | undefined {
  const record = ctx.store.state.records[id];
  return record && record.type === type && record.target === target ? record : undefined;
}

/**
 * Something found at a declared place that the host did not create: taken when the declaration
 * takes it or the machine is converged; held (left as found, reported) on an adopted machine.
 * Take is decided before hold.
 */
export function foundVerdict(resource: { take?: boolean | undefined }, ctx: ConvergeContext): 'take' | 'hold' {
  if (resource.take === true) return 'take';
  return ctx.mode === 'converged' ? 'take' : 'hold';
}

export const HELD_REASON = 'found here, not created by the host; left as found (adopted machine)';

/**
 * What stands at a resource's path now. A path this apply removes first reads, in the plan, as already
 * gone. The apply's second look is the plan's own when no batch has committed since (one lstat a path
 * on its way); a link in the way throws PathRefused.
 */
export function lookAt(path: string, ctx: ConvergeContext, apply: boolean, planned: Checked | undefined): Stats | undefined {
  // The plan did not look at a path it reads as removed first: the apply must.
  const removing = ctx.removing.size > 0 && ctx.removing.has(path);
  if (!apply) return removing ? undefined : ctx.fs.look(path);
  const look = planned?.look;
  return look !== undefined && look.generation === ctx.fs.generation && !removing ? look.st : ctx.fs.look(path);
}

/** The look a check hands to the apply (only for a step that changes something: an unchanged one is not applied). */
export const lookOf = (ctx: ConvergeContext, st: Stats | undefined): Look => ({ st, generation: ctx.fs.generation });

/**
 * What every path resource looks at first: what it asks for (mode, owner, group) and what stands at
 * its path now. A link in the way or an unknown account is a problem that refuses the step.
 */
export function observe(
  resource: FileResource | DirectoryResource,
  ctx: ConvergeContext,
  apply: boolean,
  planned?: Checked,
): { want: Wanted; st: Stats | undefined } | { problem: string } {
  const want = wantedMeta(resource, ctx.accounts);
  if (typeof want === 'string') return { problem: want };
  try {
    return { want, st: lookAt(resource.path, ctx, apply, planned) };
  } catch (err) {
    if (err instanceof PathRefused) return { problem: err.message };
    throw err;
  }
}
