import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import type { JournalEntry, Seen } from './journal.js';
import { joinTarget } from './local-path.js';
import { look, type Owner, type TargetReads } from './target.js';

export const seenOf = (st: Stats): Seen => ({ ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs });
const sameSeen = (a: Seen | undefined, st: Stats) => a !== undefined && a.ino === st.ino && a.size === st.size && a.mtimeMs === st.mtimeMs && a.ctimeMs === st.ctimeMs;
const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, '0');

/** Mode and owner drift of one entry, as words ("mode 0700→0755"). */
export function metaDrift(st: Stats, mode: number, owner: Owner): string[] {
  const out: string[] = [];
  if ((st.mode & 0o7777) !== mode) out.push(`mode ${octal(st.mode)}→${octal(mode)}`);
  if (st.uid !== owner.uid || st.gid !== owner.gid) out.push(`owner ${st.uid}:${st.gid}→${owner.uid}:${owner.gid}`);
  return out;
}

/**
 * A file that still is what the host wrote: same stat as last seen (or same content), mode, owner, and
 * as many names as the host gave it (one, or one more for each hard link of the archive to it).
 */
export function fileIntact(fs: TargetReads, path: string, st: Stats, entry: { mode: number; sha256?: string | undefined; seen?: Seen | undefined }, owner: Owner, names = 1): boolean {
  if (!st.isFile() || st.nlink !== names || metaDrift(st, entry.mode, owner).length > 0) return false;
  if (sameSeen(entry.seen, st)) return true;
  return createHash('sha256').update(fs.readFile(path, st.size)).digest('hex') === entry.sha256;
}

/**
 * Each entry's place in the target and what stands there, for entries whose place can be looked at
 * without following a link; a place that cannot is a problem, and its entry is passed over.
 */
export function* places<E extends { name: string }>(fs: TargetReads, target: string, entries: readonly E[], problems: string[]): Generator<{ entry: E; path: string; st: Stats | undefined }> {
  for (const entry of entries) {
    const path = joinTarget(target, entry.name);
    const seen = look(fs, path);
    if ('problem' in seen) problems.push(seen.problem);
    else yield { entry, path, st: seen.st };
  }
}

export interface Drift {
  name: string;
  why: string;
  /** A link of the archive to make again: its text (a hard link's file), and the text found instead, if any. */
  link?: { to: string; was?: string; hard?: true };
}

/**
 * How the archive's hard links stand: for each file, how many names it has in the target (itself and
 * the hard links that are the same inode), and the hard links that are not (a copy, or drift).
 */
function linkCounts(stats: Map<string, Stats | undefined>, entries: readonly JournalEntry[]): Map<string, number> {
  const names = new Map<string, number>();
  for (const entry of entries) {
    if (entry.type !== 'hardlink') continue;
    const mine = stats.get(entry.name);
    const file = stats.get(entry.link!);
    if (mine && file && mine.ino === file.ino && mine.dev === file.dev) names.set(entry.link!, (names.get(entry.link!) ?? 1) + 1);
  }
  return names;
}

/**
 * What of a complete journal no longer stands as it was unpacked: missing, changed content, mode or
 * owner, a link planted at a file's name (replaced), a symbolic link changed by hand, a hard link no
 * longer one. Something that cannot be put right without following a link or removing what the host
 * did not write is a problem. Reads only.
 */
export function driftOf(fs: TargetReads, target: string, journal: { entries: readonly JournalEntry[] }, owner: Owner): { drift: Drift[]; problems: string[] } {
  const drift: Drift[] = [];
  const problems: string[] = [];
  // Hard links are judged against their files' stats: only then is every place looked at before any is judged.
  const hard = journal.entries.some((e) => e.type === 'hardlink');
  const found = hard ? [...places(fs, target, journal.entries, problems)] : places(fs, target, journal.entries, problems);
  const stats = hard ? new Map([...found].map(({ entry, st }) => [entry.name, st])) : new Map<string, Stats | undefined>();
  const names = linkCounts(stats, journal.entries);
  const intact = new Map<string, boolean>();
  for (const { entry, path, st } of found) {
    const why = st === undefined ? 'missing' : entryDrift(fs, path, st, entry, owner, { names, stats, intact, problems });
    if (!why) continue;
    const item: Drift = { name: entry.name, why };
    if (entry.type === 'symlink') item.link = { to: entry.link!, ...(st?.isSymbolicLink() ? { was: fs.readlink(path) } : {}) };
    else if (entry.type === 'hardlink') item.link = { to: entry.link!, hard: true };
    drift.push(item);
  }
  return { drift, problems };
}

interface Around {
  names: Map<string, number>;
  stats: Map<string, Stats | undefined>;
  /** Files found intact so far (a hard link is intact when its file is). */
  intact: Map<string, boolean>;
  problems: string[];
}

/** Why one entry standing at its place is not as unpacked, or undefined; a place not the host's to put right is a problem. */
function entryDrift(fs: TargetReads, path: string, st: Stats, entry: JournalEntry, owner: Owner, around: Around): string | undefined {
  const planted = () => `a symbolic link (to ${fs.readlink(path)}) stands there; replaced`;
  if (entry.type === 'dir') {
    if (st.isSymbolicLink()) around.problems.push(`${path} is a symbolic link (to ${fs.readlink(path)}), not followed`);
    else if (!st.isDirectory()) around.problems.push(`${path} is not a directory`);
    else return metaDrift(st, entry.mode, owner).join(', ') || undefined;
    return undefined;
  }
  if (entry.type === 'symlink') {
    if (st.isDirectory()) around.problems.push(`${path} is a directory where the archive has a symbolic link`);
    else if (!st.isSymbolicLink()) return 'not a symbolic link; replaced';
    else if (fs.readlink(path) !== entry.link) return `links to '${fs.readlink(path)}', not '${entry.link}'`;
    return undefined;
  }
  if (st.isSymbolicLink()) return planted();
  if (!st.isFile()) return void around.problems.push(`${path} is not a regular file`);
  if (entry.type === 'hardlink') {
    const file = around.stats.get(entry.link!);
    if (file && file.ino === st.ino && file.dev === st.dev) return around.intact.get(entry.link!) ? undefined : `its file '${entry.link}' changed`;
    // Not the same inode: a copy made where the file system refused the link passes when it is intact on its own.
    return entry.copied && fileIntact(fs, path, st, entry, owner) ? undefined : `no longer a hard link to '${entry.link}'`;
  }
  const ok = fileIntact(fs, path, st, entry, owner, around.names.get(entry.name) ?? 1);
  around.intact.set(entry.name, ok);
  return ok ? undefined : [st.nlink > (around.names.get(entry.name) ?? 1) ? 'hard link replaced' : '', ...metaDrift(st, entry.mode, owner), 'content'].filter(Boolean).join(', ');
}
