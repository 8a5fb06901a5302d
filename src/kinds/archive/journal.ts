import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDirectoryDurably, fsyncDirectory, writeDurably } from '../../core/system/durable.js';
import { readFully } from '../../core/system/read.js';
import { linkTargetProblem } from './archive-links.js';
import { localPathProblem, parentOf } from './local-path.js';
import { ArchiveRefused } from './refusal.js';

/** How a file looked when the host last wrote or read it whole: unchanged stat means unchanged content. */
export interface Seen {
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

/** What stood at an entry's place before the host took it over: given back on removal. */
export interface JournalOriginal {
  mode: number;
  uid: number;
  gid: number;
  /** For a file: its kept copy under taken/, by name. */
  copy?: string;
}

export interface JournalEntry {
  /** Relative to the target, local and normal. */
  name: string;
  /** A hard link is a second name of a file entry listed before it; a symbolic link is the archive's own, like a file. */
  type: 'file' | 'dir' | 'symlink' | 'hardlink';
  /** 0..0777 (a symbolic link's: 0777). */
  mode: number;
  /** A file's (or a hard link's file's) content hash (hex). */
  sha256?: string;
  /** A symbolic link's text, as the archive has it; a hard link's file, by name. */
  link?: string;
  /** A hard link the file system refused, made as a copy of its file. */
  copied?: true;
  seen?: Seen;
  original?: JournalOriginal;
}

/**
 * What an archive unpacked into its target: kept by the host alone, under the state directory, and
 * the only thing a removal trusts. `complete: false` while an unpack is under way: it then names
 * everything the old and the new archive may have put there, so that a crash at any instant leaves
 * no entry of the host's unnamed.
 */
export interface Journal {
  version: 1;
  target: string;
  /** The archive unpacked (or being unpacked). */
  sha256: string;
  complete: boolean;
  /** The host made the target directory itself (a taken one is left in place on removal). */
  created: boolean;
  /** The target directory's own mode and owner before it was taken over. */
  original?: JournalOriginal;
  entries: JournalEntry[];
}

export const JOURNAL_DIR = 'unpacked';

export function journalPath(stateDir: string, target: string): string {
  return join(stateDir, JOURNAL_DIR, `${createHash('sha256').update(target).digest('hex')}.json`);
}

const HEX64 = /^[0-9a-f]{64}$/;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/**
 * The journal of a target, or undefined when there is none. Refused whole (nothing is removed or
 * adopted by it) when it is not a regular file of this account, mode 0600 at most, or when it names
 * another target, an entry that is not a local path, an entry whose parent is neither the target nor
 * a directory it lists before, or anything outside its vocabulary.
 */
export function readJournal(stateDir: string, target: string): Journal | undefined {
  const file = journalPath(stateDir, target);
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw forged(file, code === 'ELOOP' ? 'it is a symbolic link' : `it cannot be read (${code})`);
  }
  let text: string;
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw forged(file, 'it is not a regular file');
    if (st.uid !== process.getuid?.()) throw forged(file, `it is owned by uid ${st.uid}, not by this host's account`);
    if ((st.mode & 0o077) !== 0) throw forged(file, `its mode is ${(st.mode & 0o777).toString(8)}, not 0600`);
    text = readFully(fd, st.size).toString('utf8');
  } finally {
    closeSync(fd);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw forged(file, `it is not JSON (${(err as Error).message})`);
  }
  const problem = journalProblem(value, target);
  if (problem) throw forged(file, problem);
  return value as Journal;
}

function forged(file: string, why: string): ArchiveRefused {
  return new ArchiveRefused('journal-forged', `the journal ${file} is refused whole: ${why}; nothing it names was touched`);
}

/** Why a journal cannot be trusted for this target, or undefined. */
export function journalProblem(value: unknown, target: string): string | undefined {
  if (!isObject(value) || value.version !== 1) return 'not a version 1 journal';
  if (value.target !== target) return `it names another target (${JSON.stringify(value.target)}, not ${target})`;
  if (typeof value.sha256 !== 'string' || !HEX64.test(value.sha256)) return 'its archive digest is not a sha256';
  if (typeof value.complete !== 'boolean' || typeof value.created !== 'boolean') return 'it lacks complete or created';
  if (value.original !== undefined && originalProblem(value.original)) return `its original: ${originalProblem(value.original)}`;
  if (!Array.isArray(value.entries)) return 'it has no entries';
  const dirs = new Set<string>(['']);
  const names = new Set<string>();
  for (let i = 0; i < value.entries.length; i++) {
    const problem = entryProblem(value.entries[i], dirs, names);
    if (problem) return `entry ${i}: ${problem}`;
  }
  return undefined;
}

function entryProblem(entry: unknown, dirs: Set<string>, names: Set<string>): string | undefined {
  if (!isObject(entry) || typeof entry.name !== 'string') return 'not an entry';
  const name = entry.name;
  const local = localPathProblem(name);
  if (local) return `'${name}' is not a local path (${local})`;
  const parent = parentOf(name);
  if (!dirs.has(parent)) return `the parent of '${name}' ('${parent}') is not under the target: neither the target nor a directory listed before it`;
  if (names.has(name)) return `'${name}' is listed twice`;
  if (!TYPES.has(entry.type as string)) return `'${name}' has type ${JSON.stringify(entry.type)}`;
  if (!isCount(entry.mode) || (entry.mode as number) > 0o777) return `'${name}' has mode ${JSON.stringify(entry.mode)}`;
  if (entry.type === 'dir') dirs.add(name);
  else if (entry.type !== 'symlink' && (typeof entry.sha256 !== 'string' || !HEX64.test(entry.sha256))) return `'${name}' has no content hash`;
  const link = linkProblem(entry, names);
  if (link) return `'${name}' ${link}`;
  names.add(name);
  if (entry.seen !== undefined && !(isObject(entry.seen) && ['ino', 'size', 'mtimeMs', 'ctimeMs'].every((k) => typeof (entry.seen as Record<string, unknown>)[k] === 'number'))) return `'${name}' has a malformed seen`;
  if (entry.original !== undefined && originalProblem(entry.original)) return `'${name}': ${originalProblem(entry.original)}`;
  const unknown = Object.keys(entry).find((k) => !known.has(k));
  return unknown ? `'${name}' has an unknown field '${unknown}'` : undefined;
}

const TYPES = new Set(['file', 'dir', 'symlink', 'hardlink']);
const known = new Set(['name', 'type', 'mode', 'sha256', 'link', 'copied', 'seen', 'original']);

/**
 * A symbolic link's text must be one the unpack would make (the journal's text is only compared with
 * what stands, never written: drift is put back from the verified archive); a hard link names an
 * entry listed before it.
 */
function linkProblem(entry: Record<string, unknown>, names: Set<string>): string | undefined {
  if (entry.copied !== undefined && !(entry.copied === true && entry.type === 'hardlink')) return 'has a malformed copied';
  if (entry.type !== 'symlink' && entry.type !== 'hardlink') return entry.link === undefined ? undefined : 'has a link but is not one';
  if (typeof entry.link !== 'string') return 'has no link';
  if (entry.type === 'symlink') {
    const problem = linkTargetProblem(entry.link);
    return problem ? `links to ${JSON.stringify(entry.link)}: ${problem}` : undefined;
  }
  return names.has(entry.link) ? undefined : `is a hard link to '${entry.link}', which is not listed before it`;
}

function originalProblem(original: unknown): string | undefined {
  if (!isObject(original) || !isCount(original.mode) || !isCount(original.uid) || !isCount(original.gid)) return 'a malformed original';
  if (original.copy !== undefined && !(typeof original.copy === 'string' && HEX64.test(original.copy))) return 'an original copy that is not a kept copy name';
  return undefined;
}

/** Saved durably (temporary, fsync, rename, directory fsync), 0600 in a 0700 directory. */
export function saveJournal(stateDir: string, journal: Journal): void {
  ensureDirectoryDurably(join(stateDir, JOURNAL_DIR));
  writeDurably(journalPath(stateDir, journal.target), Buffer.from(JSON.stringify(journal)), 0o600);
}

export function dropJournal(stateDir: string, target: string): void {
  try {
    unlinkSync(journalPath(stateDir, target));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return;
  }
  fsyncDirectory(join(stateDir, JOURNAL_DIR));
}

/** The archives every journal names (complete or under way): what the cache must keep. */
export function journaledArchives(stateDir: string): Set<string> {
  const dir = join(stateDir, JOURNAL_DIR);
  const found = new Set<string>();
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return found;
  }
  for (const name of names) {
    try {
      const value = JSON.parse(readFileSync(join(dir, name), 'utf8')) as { sha256?: unknown };
      if (typeof value.sha256 === 'string' && HEX64.test(value.sha256)) found.add(value.sha256);
    } catch {
      // a leftover temporary save, or a journal refused when it is used
    }
  }
  return found;
}
