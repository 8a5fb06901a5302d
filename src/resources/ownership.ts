import type { Stats } from 'node:fs';
import type { DirectoryResource, FileResource } from '../declaration/schema.js';
import type { ResourceRecord } from '../store/state.js';
import type { Accounts } from './accounts.js';
import type { ConvergeContext } from './types.js';
import { PathRefused } from './rooted-fs.js';

export interface Wanted {
  mode: number;
  uid: number;
  gid: number;
}

export const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, '0');

/** Mode, owner and group a resource asks for (defaults: root, 0644 files, 0755 directories). */
export function wantedMeta(resource: FileResource | DirectoryResource, accounts: Accounts): Wanted | string {
  const mode = parseInt(resource.mode ?? (resource.type === 'file' ? '0644' : '0755'), 8);
  const uid = accounts.uid(resource.owner ?? 'root');
  if (uid === undefined) return `owner '${resource.owner}' does not exist on this machine`;
  const gid = accounts.gid(resource.group ?? 'root');
  if (gid === undefined) return `group '${resource.group}' does not exist on this machine`;
  return { mode, uid, gid };
}

/** The drift of mode, owner and group, as plan actions ("mode 0644→0640"). */
export function metaDrift(st: Stats, want: Wanted, accounts: Accounts): string[] {
  const actions: string[] = [];
  if ((st.mode & 0o7777) !== want.mode) actions.push(`mode ${octal(st.mode)}→${octal(want.mode)}`);
  if (st.uid !== want.uid) actions.push(`owner ${accounts.userName(st.uid)}→${accounts.userName(want.uid)}`);
  if (st.gid !== want.gid) actions.push(`group ${accounts.groupName(st.gid)}→${accounts.groupName(want.gid)}`);
  return actions;
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
 * What every path resource looks at first: what it asks for (mode, owner, group) and what stands at
 * its path now. A link in the way or an unknown account is a problem that refuses the step; a path
 * this apply removes first reads, in the plan, as already gone.
 */
export function observe(
  resource: FileResource | DirectoryResource,
  ctx: ConvergeContext,
  apply: boolean,
): { want: Wanted; st: Stats | undefined } | { problem: string } {
  const want = wantedMeta(resource, ctx.accounts);
  if (typeof want === 'string') return { problem: want };
  try {
    return { want, st: ctx.removing.has(resource.path) && !apply ? undefined : ctx.fs.lstat(resource.path) };
  } catch (err) {
    if (err instanceof PathRefused) return { problem: err.message };
    throw err;
  }
}
