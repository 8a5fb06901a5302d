import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { fsyncDirectory } from '../system/durable.js';
import type { ArchiveLimits } from '../config/archive-limits.js';
import { joinTarget } from './local-path.js';
import { readArchive, type ArchiveBytes, type Manifest, type ManifestEntry } from './read.js';
import { saveJournal, type Journal, type JournalEntry, type JournalOriginal, type Seen } from './journal.js';
import { look, type Owner, type TargetReads, type TargetWrites } from './target.js';
import { ArchiveRefused } from './refusal.js';

const seenOf = (st: Stats): Seen => ({ ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs });
const sameSeen = (a: Seen | undefined, st: Stats) => a !== undefined && a.ino === st.ino && a.size === st.size && a.mtimeMs === st.mtimeMs && a.ctimeMs === st.ctimeMs;
const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, '0');

/** Mode and owner drift of one entry, as words ("mode 0700→0755"). */
function metaDrift(st: Stats, mode: number, owner: Owner): string[] {
  const out: string[] = [];
  if ((st.mode & 0o7777) !== mode) out.push(`mode ${octal(st.mode)}→${octal(mode)}`);
  if (st.uid !== owner.uid || st.gid !== owner.gid) out.push(`owner ${st.uid}:${st.gid}→${owner.uid}:${owner.gid}`);
  return out;
}

/** A file that still is what the host wrote: same stat as last seen (or same content), mode, owner, one name. */
function fileIntact(fs: TargetReads, path: string, st: Stats, entry: { mode: number; sha256?: string | undefined; seen?: Seen | undefined }, owner: Owner): boolean {
  if (!st.isFile() || st.nlink !== 1 || metaDrift(st, entry.mode, owner).length > 0) return false;
  if (sameSeen(entry.seen, st)) return true;
  return createHash('sha256').update(fs.readFile(path, st.size)).digest('hex') === entry.sha256;
}

/**
 * Each entry's place in the target and what stands there, for entries whose place can be looked at
 * without following a link; a place that cannot is a problem, and its entry is passed over.
 */
function* places<E extends { name: string }>(fs: TargetReads, target: string, entries: readonly E[], problems: string[]): Generator<{ entry: E; path: string; st: Stats | undefined }> {
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
}

/**
 * What of a complete journal no longer stands as it was unpacked: missing, changed content, mode or
 * owner, a link planted at a file's name (replaced). Something that cannot be put right without
 * following a link or removing what the host did not write is a problem. Reads only.
 */
export function driftOf(fs: TargetReads, target: string, journal: Journal, owner: Owner): { drift: Drift[]; problems: string[] } {
  const drift: Drift[] = [];
  const problems: string[] = [];
  for (const { entry, path, st } of places(fs, target, journal.entries, problems)) {
    if (st === undefined) drift.push({ name: entry.name, why: 'missing' });
    else if (entry.type === 'dir') {
      if (st.isSymbolicLink()) problems.push(`${path} is a symbolic link (to ${fs.readlink(path)}), not followed`);
      else if (!st.isDirectory()) problems.push(`${path} is not a directory`);
      else {
        const meta = metaDrift(st, entry.mode, owner);
        if (meta.length > 0) drift.push({ name: entry.name, why: meta.join(', ') });
      }
    } else if (st.isSymbolicLink()) drift.push({ name: entry.name, why: `a symbolic link (to ${fs.readlink(path)}) stands there; replaced` });
    else if (!st.isFile()) problems.push(`${path} is not a regular file`);
    else if (!fileIntact(fs, path, st, entry, owner)) drift.push({ name: entry.name, why: [st.nlink > 1 ? 'hard link replaced' : '', ...metaDrift(st, entry.mode, owner), 'content'].filter(Boolean).join(', ') });
  }
  return { drift, problems };
}

/**
 * Before a new archive is unpacked: every entry's place must be reachable without a link, and what
 * stands there must be the host's (named by the old journal) or of the entry's own kind (then taken
 * over, its original kept). Reads only; returns what was found at entries' places.
 */
export function preflight(fs: TargetReads, target: string, manifest: Manifest, old: Journal | undefined): { problems: string[]; found: Map<string, Stats> } {
  const owned = new Set(old?.entries.map((e) => e.name));
  const problems: string[] = [];
  const found = new Map<string, Stats>();
  for (const { entry, path, st } of places(fs, target, manifest.entries, problems)) {
    if (st === undefined) continue;
    const ours = owned.has(entry.name);
    if (st.isSymbolicLink()) {
      if (!ours || entry.type !== 'file') problems.push(`${path} is a symbolic link (to ${fs.readlink(path)}), not followed`);
    } else if (st.isDirectory() ? entry.type !== 'dir' : st.isFile() ? entry.type !== 'file' : true) {
      if (!ours || !(st.isDirectory() || st.isFile())) problems.push(`${path} is ${kindOf(st)} where the archive has ${entry.type === 'dir' ? 'a directory' : 'a file'}`);
    } else if (!ours) found.set(entry.name, st);
  }
  return { problems, found };
}

const kindOf = (st: Stats) => (st.isDirectory() ? 'a directory' : st.isFile() ? 'a file' : st.isFIFO() ? 'a fifo' : st.isSocket() ? 'a socket' : 'a device');

/** What the journal records while a new archive replaces the old: every name either may have put there. */
function union(old: Journal | undefined, next: JournalEntry[]): JournalEntry[] {
  if (!old) return next;
  const byName = new Map(next.map((e) => [e.name, e]));
  // An old directory keeps its place so that its old children keep a listed parent.
  const merged = old.entries.map((e) => (byName.has(e.name) && !(e.type === 'dir' && byName.get(e.name)!.type === 'file') ? byName.get(e.name)! : e));
  const listed = new Set(old.entries.map((e) => e.name));
  return [...merged, ...next.filter((e) => !listed.has(e.name))];
}

export interface UnpackRequest {
  fs: TargetReads;
  writes: TargetWrites;
  target: string;
  bytes: ArchiveBytes;
  sha256: string;
  limits: ArchiveLimits;
  manifest: Manifest;
  /** The journal now on disk (the archive being replaced, or an unpack a crash cut short). */
  old: Journal | undefined;
  owner: Owner;
  /** The target directory's own mode. */
  targetMode: number;
  stateDir: string;
  takenDir: string;
  /** Whether the host made the target, and what it was before when it took it over. */
  created: boolean;
  original?: JournalOriginal;
}

export interface Unpacked {
  journal: Journal;
  written: number;
  removed: number;
  /** Old entries left in place, with why (a directory others filled). */
  left: string[];
}

/**
 * Unpacks a verified, inspected archive into its target through the host's write path. The journal
 * is saved durably before anything is staged (naming the old and the new entries) and again once
 * every write is durable (the new entries alone, as they now look), so a crash at any instant leaves
 * every entry of the host's named. Entries the new archive lacks go first (the write path removes
 * before it makes), then directories, then files; a file already as the new archive has it is not
 * written again.
 */
export async function unpack(request: UnpackRequest): Promise<Unpacked> {
  const { fs, writes, target, manifest, old, owner } = request;
  const { problems, found } = preflight(fs, target, manifest, old);
  if (problems.length > 0) throw new ArchiveRefused('in-the-way', problems.join('; '));
  const oldByName = new Map(old?.entries.map((e) => [e.name, e]));
  const entries: JournalEntry[] = manifest.entries.map((e) => journalEntryOf(e, oldByName.get(e.name), found.get(e.name), request));
  const byName = new Map(entries.map((e) => [e.name, e]));
  saveJournal(request.stateDir, { version: 1, target, sha256: request.sha256, complete: false, created: request.created, ...(request.original ? { original: request.original } : {}), entries: union(old, entries) });

  const left: string[] = [];
  let written = 0;
  /** Files staged since the last flush: their stat after the rename is what the journal keeps. */
  let staged: JournalEntry[] = [];
  const flush = async () => {
    const done = await writes.flush();
    for (const entry of staged) {
      const st = done.statOf(joinTarget(target, entry.name));
      if (st) entry.seen = seenOf(st);
    }
    staged = [];
    left.push(...done.left.map((path) => `${path}: holds what others put there; left`));
  };

  // What the old archive had and the new one lacks, and old entries of another kind than the new ones.
  const leaving = (old?.entries ?? []).filter((e) => byName.get(e.name)?.type !== e.type);
  const removed = stageRemoval(fs, writes, target, leaving, request.takenDir, left);
  const st = fs.lstat(target);
  const targetMeta = { mode: request.targetMode, ...owner };
  if (st === undefined) writes.makeDirectory(target, targetMeta);
  else if (metaDrift(st, targetMeta.mode, owner).length > 0) writes.setMeta(target, targetMeta, 'directory');
  for (const entry of entries) {
    if (entry.type !== 'dir') continue;
    const path = joinTarget(target, entry.name);
    const now = byName.get(entry.name) && oldByName.get(entry.name)?.type === 'file' ? undefined : fs.lstat(path);
    if (now?.isDirectory()) {
      if (metaDrift(now, entry.mode, owner).length === 0) continue;
      writes.setMeta(path, { mode: entry.mode, ...owner }, 'directory');
    } else writes.makeDirectory(path, { mode: entry.mode, ...owner });
    written++;
  }
  await readArchive(request.bytes, request.limits, async (file, content) => {
    const entry = byName.get(file.name);
    if (!entry || entry.sha256 !== file.sha256) throw new ArchiveRefused('corrupt', `entry '${file.name}' read differently the second time; nothing more is written`);
    const path = joinTarget(target, file.name);
    const before = oldByName.get(file.name);
    const now = before?.type === 'dir' ? undefined : fs.lstat(path);
    if (now?.isFile() && before?.sha256 === entry.sha256 && fileIntact(fs, path, now, { ...before, mode: entry.mode }, owner)) {
      entry.seen = seenOf(now);
      return;
    }
    writes.writeFile(path, content, { mode: entry.mode, ...owner });
    staged.push(entry);
    written++;
    if (writes.full) await flush();
  });
  await flush();
  // Originals given back are durable: their kept copies go.
  for (const copy of keptCopies(leaving, request.takenDir)) rmSync(copy, { force: true });

  const journal: Journal = { version: 1, target, sha256: request.sha256, complete: true, created: request.created, ...(request.original ? { original: request.original } : {}), entries };
  saveJournal(request.stateDir, journal);
  return { journal, written, removed, left };
}

function journalEntryOf(e: ManifestEntry, before: JournalEntry | undefined, found: Stats | undefined, request: UnpackRequest): JournalEntry {
  const entry: JournalEntry = { name: e.name, type: e.type, mode: e.mode, ...(e.sha256 ? { sha256: e.sha256 } : {}) };
  if (before?.seen && before.sha256 === e.sha256) entry.seen = before.seen;
  // What the host took over keeps its original (an earlier take's, or kept now).
  const original = before?.original ?? (found ? keepOriginal(request, e, found) : undefined);
  if (original) entry.original = original;
  return entry;
}

/** A found file's content under taken/ (by the hash of its path), and its mode and owner. */
function keepOriginal(request: UnpackRequest, entry: ManifestEntry, st: Stats): JournalOriginal {
  const meta = { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid };
  if (entry.type === 'dir') return meta;
  const path = joinTarget(request.target, entry.name);
  const copy = createHash('sha256').update(path).digest('hex');
  mkdirSync(request.takenDir, { recursive: true, mode: 0o700 });
  writeFileSync(join(request.takenDir, copy), request.fs.readFile(path, st.size), { mode: 0o600 });
  fsyncDirectory(request.takenDir);
  return { ...meta, copy };
}

/**
 * Stages the removal of exactly these journal entries: files (or their originals given back) first,
 * then directories deepest first, each only when empty (the write path leaves a directory others
 * filled, and says so). A link or anything else the host never writes is left where it stands.
 * Refused whole, before anything is staged, when a place cannot be reached without following a link.
 * Returns how many removals were staged.
 */
export function stageRemoval(fs: TargetReads, writes: TargetWrites, target: string, entries: JournalEntry[], takenDir: string, left: string[]): number {
  const looks = entries.map((entry) => {
    const path = joinTarget(target, entry.name);
    return { entry, path, seen: look(fs, path) };
  });
  const unreachable = looks.flatMap((l) => ('problem' in l.seen ? [l.seen.problem] : []));
  if (unreachable.length > 0) throw new ArchiveRefused('in-the-way', `${unreachable.join('; ')}; nothing was removed`);
  let removed = 0;
  const depth = (name: string) => name.split('/').length;
  const present = looks.flatMap((l) => ('st' in l.seen && l.seen.st !== undefined ? [{ ...l, st: l.seen.st }] : []));
  for (const { entry, path, st } of present) {
    if (st.isDirectory()) continue;
    const original = entry.original;
    if (original?.copy !== undefined) {
      const copy = join(takenDir, original.copy);
      writes.writeFile(path, readFileSync(copy), { mode: original.mode, uid: original.uid, gid: original.gid });
      continue;
    }
    if (!st.isFile()) {
      left.push(`${path}: ${st.isSymbolicLink() ? 'a symbolic link' : 'not a regular file'} the host did not write; left`);
      continue;
    }
    writes.removeFile(path);
    removed++;
  }
  for (const { entry, path } of present.filter((p) => p.st.isDirectory()).sort((a, b) => depth(b.entry.name) - depth(a.entry.name))) {
    if (entry.original) writes.setMeta(path, { mode: entry.original.mode, uid: entry.original.uid, gid: entry.original.gid }, 'directory');
    else {
      writes.removeDirectory(path);
      removed++;
    }
  }
  return removed;
}

/** The kept copies of originals given back: removed once the giving back is durable. */
export function keptCopies(entries: JournalEntry[], takenDir: string): string[] {
  return entries.flatMap((e) => (e.original?.copy ? [join(takenDir, e.original.copy)] : []));
}
