import type { Stats } from 'node:fs';
import type { DirectoryResource, FileResource } from '../../core/declaration/schema.js';
import type { ResourceRecord } from '../../core/store/state.js';
import type { Accounts } from './unix-accounts.js';
import type { Checked, ConvergeContext, Look } from './handler-types.js';
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
 * asks the same few questions 10,000 times. Kept while the accounts' generation stays the same (they
 * resolve a name the same way until they read the machine's tables again or learn a new account).
 */
type Answers = Map<string, Map<string | undefined, Map<string | undefined, Map<string | undefined, Wanted | string>>>>;
const wantedByAccounts = new WeakMap<Accounts, { generation: number; byType: Answers }>();

/** Mode, owner and group a resource asks for (defaults: root, 0644 files, 0755 directories); one answer for the same question. */
export function wantedMeta(resource: FileResource | DirectoryResource, accounts: Accounts): Wanted | string {
  let answers = wantedByAccounts.get(accounts);
  if (answers === undefined || answers.generation !== accounts.generation) wantedByAccounts.set(accounts, (answers = { generation: accounts.generation, byType: new Map() }));
  const byType = answers.byType;
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
 * on its way); a link in the way throws PathRefused, and so, in the plan, does a path whose directory
 * nothing makes.
 */
export function lookAt(path: string, ctx: ConvergeContext, apply: boolean, planned: Checked | undefined): Stats | undefined {
  // The plan did not look at a path it reads as removed first: the apply must.
  const removing = ctx.removing.size > 0 && ctx.removing.has(path);
  if (!apply) {
    const st = removing ? undefined : ctx.fs.look(path);
    const missing = st === undefined ? missingParent(path, ctx) : undefined;
    if (missing) throw new PathRefused(missing);
    return st;
  }
  const look = planned?.look;
  return look !== undefined && look.generation === ctx.fs.generation && !removing ? look.st : ctx.fs.look(path);
}

/** The look a check hands to the apply (only for a step that changes something: an unchanged one is not applied). */
export const lookOf = (ctx: ConvergeContext, st: Stats | undefined): Look => ({ st, generation: ctx.fs.generation });

/**
 * A path to be made whose directory is not on the machine (or is removed first) and that nothing in the
 * declaration makes: the apply would fail there, so the plan says so before anything is touched.
 */
function missingParent(path: string, ctx: ConvergeContext): string | undefined {
  const parent = path.slice(0, path.lastIndexOf('/')) || '/';
  if (parent === '/' || ctx.declaredDirectories === undefined || ctx.declaredDirectories.has(parent)) return undefined;
  if (!ctx.removing.has(parent) && ctx.fs.look(parent) !== undefined) return undefined;
  return `its directory ${parent} does not exist and nothing in the declaration makes it: declare it (a directory resource before this one), or make it on the machine`;
}

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
