import { createHash } from 'node:crypto';
import { rmSync, writeFileSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { ensureDirectoryDurably, fsyncDirectory } from '../../core/system/durable.js';
import { fileIntact, metaDrift, seenOf } from './drift.js';
import type { ArchiveLimits } from '../../core/config/archive-limits.js';
import { joinTarget } from './local-path.js';
import { preflight, replacedLinks, under } from './preflight.js';
import { readArchive, type ArchiveBytes, type Manifest, type ManifestEntry } from './archive-read.js';
import { saveJournal, type Journal, type JournalEntry, type JournalOriginal } from './journal.js';
import { keptCopies, stageRemoval } from './removal.js';
import type { Owner, TargetReads, TargetWrites } from './target.js';
import { ArchiveRefused } from './refusal.js';

export { preflight } from './preflight.js';

/** What the journal records while a new archive replaces the old: every name either may have put there. */
function union(old: Journal | undefined, next: JournalEntry[]): JournalEntry[] {
  if (!old) return next;
  const byName = new Map(next.map((e) => [e.name, e]));
  // An old directory keeps its place so that its old children keep a listed parent.
  const merged = old.entries.map((e) => (byName.has(e.name) && !(e.type === 'dir' && byName.get(e.name)!.type !== 'dir') ? byName.get(e.name)! : e));
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
  /** Old entries left in place, with why (a directory others filled); hard links made as copies. */
  left: string[];
}

/**
 * Unpacks a verified, inspected archive into its target through the host's write path. The journal
 * is saved durably before anything is staged (naming the old and the new entries) and again once
 * every write is durable (the new entries alone, as they now look), so a crash at any instant leaves
 * every entry of the host's named. Entries the new archive lacks go first (the write path removes
 * before it makes), then directories, then files, then hard links, then symbolic links: no entry is
 * ever written below a link, and what already stands as the new archive has it is not written again.
 */
export async function unpack(request: UnpackRequest): Promise<Unpacked> {
  const { fs, writes, target, manifest, old, owner } = request;
  const { problems, found } = preflight(fs, target, manifest, old);
  if (problems.length > 0) throw new ArchiveRefused('in-the-way', problems.join('; '));
  const oldByName = new Map(old?.entries.map((e) => [e.name, e]));
  const entries: JournalEntry[] = manifest.entries.map((e) => journalEntryOf(e, oldByName.get(e.name), found.get(e.name), request));
  saveJournal(request.stateDir, { version: 1, target, sha256: request.sha256, complete: false, created: request.created, ...(request.original ? { original: request.original } : {}), entries: union(old, entries) });

  const staging = new Staging(request, entries);
  // What the old archive had and the new one lacks, and old entries of another kind than the new ones.
  const leaving = (old?.entries ?? []).filter((e) => staging.byName.get(e.name)?.type !== e.type);
  const removed = stageRemoval(fs, writes, target, leaving, request.takenDir, staging.left);
  const st = fs.lstat(target);
  const targetMeta = { mode: request.targetMode, ...owner };
  if (st === undefined) writes.makeDirectory(target, targetMeta);
  else if (metaDrift(st, targetMeta.mode, owner).length > 0) writes.setMeta(target, targetMeta, 'directory');
  staging.directories();
  await readArchive(request.bytes, request.limits, (file, content) => staging.file(file, content));
  staging.links();
  await staging.flush();
  // Originals given back are durable: their kept copies go.
  for (const copy of keptCopies(leaving, request.takenDir)) rmSync(copy, { force: true });

  const journal: Journal = { version: 1, target, sha256: request.sha256, complete: true, created: request.created, ...(request.original ? { original: request.original } : {}), entries };
  saveJournal(request.stateDir, journal);
  return { journal, written: staging.written, removed, left: staging.left };
}

/** The staging of one unpack's new entries, kind by kind, and what its flushes made durable. */
class Staging {
  readonly byName: Map<string, JournalEntry>;
  readonly left: string[] = [];
  written = 0;
  private readonly oldByName: Map<string, JournalEntry>;
  /** Old links the new archive does not keep: removed first, so nothing below them is looked at through them. */
  private readonly replaced: Set<string>;
  /** Files written in this unpack: their hard links are made again. */
  private readonly rewritten = new Set<string>();
  /** Each file's hard links, by the file's name. */
  private readonly hardLinks = new Map<string, JournalEntry[]>();
  /** Files and links staged since the last flush: their stat after the rename is what the journal keeps. */
  private staged: JournalEntry[] = [];

  constructor(private readonly request: UnpackRequest, private readonly entries: JournalEntry[]) {
    this.byName = new Map(entries.map((e) => [e.name, e]));
    this.oldByName = new Map(request.old?.entries.map((e) => [e.name, e]));
    this.replaced = replacedLinks(request.old, { entries });
    for (const e of entries) if (e.type === 'hardlink') this.hardLinks.set(e.link!, [...(this.hardLinks.get(e.link!) ?? []), e]);
  }

  private path(name: string): string {
    return joinTarget(this.request.target, name);
  }

  /** What stands at an entry's place now, or undefined when what stands there goes first (an old entry of another kind, or below an old link). */
  private now(entry: JournalEntry): Stats | undefined {
    const before = this.oldByName.get(entry.name);
    if ((before && before.type !== entry.type) || under(this.replaced, entry.name)) return undefined;
    return this.request.fs.lstat(this.path(entry.name));
  }

  directories(): void {
    const { writes, owner } = this.request;
    for (const entry of this.entries) {
      if (entry.type !== 'dir') continue;
      const now = this.now(entry);
      if (now?.isDirectory()) {
        if (metaDrift(now, entry.mode, owner).length === 0) continue;
        writes.setMeta(this.path(entry.name), { mode: entry.mode, ...owner }, 'directory');
      } else writes.makeDirectory(this.path(entry.name), { mode: entry.mode, ...owner });
      this.written++;
    }
  }

  async file(file: ManifestEntry, content: Buffer): Promise<void> {
    const { fs, writes, owner } = this.request;
    const entry = this.byName.get(file.name);
    if (!entry || entry.sha256 !== file.sha256) throw new ArchiveRefused('corrupt', `entry '${file.name}' read differently the second time; nothing more is written`);
    const path = this.path(file.name);
    const before = this.oldByName.get(file.name);
    const now = this.now(entry);
    const names = 1 + (this.hardLinks.get(entry.name) ?? []).filter((e) => this.linked(e)).length;
    if (now?.isFile() && before?.sha256 === entry.sha256 && fileIntact(fs, path, now, { ...before, mode: entry.mode }, owner, names)) {
      entry.seen = seenOf(now);
      return;
    }
    writes.writeFile(path, content, { mode: entry.mode, ...owner });
    this.rewritten.add(entry.name);
    this.stage(entry);
    if (writes.full) await this.flush();
  }

  /** Whether a hard link of the old archive still stands as one (the same inode as its file, or the intact copy made where the file system refused). */
  private linked(entry: JournalEntry): boolean {
    const before = this.oldByName.get(entry.name);
    if (before?.type !== 'hardlink' || before.link !== entry.link || under(this.replaced, entry.name)) return false;
    const { fs, owner } = this.request;
    const mine = fs.lstat(this.path(entry.name));
    const file = fs.lstat(this.path(entry.link!));
    if (mine === undefined || file === undefined || !mine.isFile()) return false;
    if (mine.ino === file.ino && mine.dev === file.dev) return true;
    return before.copied === true && before.sha256 === entry.sha256 && fileIntact(fs, this.path(entry.name), mine, { ...before, mode: entry.mode }, owner);
  }

  /** Hard links, then symbolic links, each only where it does not already stand as the archive has it. */
  links(): void {
    const { fs, writes, owner } = this.request;
    for (const entry of this.entries) {
      if (entry.type !== 'hardlink') continue;
      if (!this.rewritten.has(entry.link!) && this.linked(entry)) continue;
      writes.hardLink(this.path(entry.name), this.path(entry.link!));
      this.stage(entry);
    }
    for (const entry of this.entries) {
      if (entry.type !== 'symlink') continue;
      const now = this.now(entry);
      if (now?.isSymbolicLink() && fs.readlink(this.path(entry.name)) === entry.link) continue;
      writes.symlink(this.path(entry.name), entry.link!, owner);
      this.stage(entry);
    }
  }

  private stage(entry: JournalEntry): void {
    this.staged.push(entry);
    this.written++;
  }

  async flush(): Promise<void> {
    const done = await this.request.writes.flush();
    for (const entry of this.staged) {
      const st = done.statOf(this.path(entry.name));
      if (!st || entry.type === 'symlink') continue;
      entry.seen = seenOf(st);
      if (entry.type !== 'hardlink') continue;
      if (done.copied.includes(this.path(entry.name))) entry.copied = true;
      else {
        delete entry.copied;
        // A new name changes its file's ctime: the file is seen as it now is.
        this.byName.get(entry.link!)!.seen = seenOf(st);
      }
    }
    this.staged = [];
    this.left.push(...done.left.map((path) => `${path}: holds what others put there; left`));
    this.left.push(...done.copied.map((path) => `${path}: a copy, not a hard link (the file system refused one)`));
  }
}

function journalEntryOf(e: ManifestEntry, before: JournalEntry | undefined, found: Stats | undefined, request: UnpackRequest): JournalEntry {
  const entry: JournalEntry = { name: e.name, type: e.type, mode: e.mode, ...(e.sha256 ? { sha256: e.sha256 } : {}), ...(e.link !== undefined ? { link: e.link } : {}) };
  if (before?.seen && before.type === e.type && before.sha256 === e.sha256) entry.seen = before.seen;
  if (before?.copied && e.type === 'hardlink' && before.link === e.link) entry.copied = true;
  // What the host took over keeps its original (an earlier take's, or kept now).
  const original = before?.original ?? (found ? keepOriginal(request, e, found) : undefined);
  if (original) entry.original = original;
  return entry;
}

/** A found file's content under taken/ (by the hash of its path), and its mode and owner; a directory's or a link's mode and owner. */
function keepOriginal(request: UnpackRequest, entry: ManifestEntry, st: Stats): JournalOriginal {
  const meta = { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid };
  if (entry.type === 'dir' || entry.type === 'symlink') return meta;
  const path = joinTarget(request.target, entry.name);
  const copy = createHash('sha256').update(path).digest('hex');
  ensureDirectoryDurably(request.takenDir);
  writeFileSync(join(request.takenDir, copy), request.fs.readFile(path, st.size), { mode: 0o600 });
  fsyncDirectory(request.takenDir);
  return { ...meta, copy };
}
