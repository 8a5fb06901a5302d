import { closeSync, lstatSync, openSync, rmdirSync, unlinkSync } from 'node:fs';
import { posix } from 'node:path';
import type { Store } from '../store/store.js';
import type { Logger } from '../system/log.js';
import { fsyncSync } from 'node:fs';
import { PathRefused, RootedFs } from './rooted-fs.js';
import type { Intent, IntentEntry } from './write-batch.js';

export interface Recovered {
  /** Temporary files of a batch cut short, removed from their target directories. */
  temporaries: number;
  /** Paths a batch made that the store never recorded (the save after it was cut off), removed again. */
  undone: number;
  /** Paths a batch made that the store recorded: kept. */
  kept: number;
  /** Paths that could not be undone (filled by others since, or refused): left, and said. */
  left: string[];
}

/**
 * At start, under the lock: every path an interrupted apply may have made is finished or undone. A
 * temporary file is removed; a file or directory made where nothing stood is kept when the store
 * records it (the apply's save happened) and removed when it does not (the save never came: nobody
 * would ever remove it). Directories go deepest first, and only when empty. Says how many, aloud.
 */
export function recoverIntents(store: Store, log: Logger): Recovered {
  const result: Recovered = { temporaries: 0, undone: 0, kept: 0, left: [] };
  const intents = store.pendingIntents.filter(isIntent);
  if (store.pendingIntents.length === 0) return result;
  const claimed = claimedPaths(store);
  const made: Array<{ fs: RootedFs; entry: IntentEntry }> = [];
  const roots = new Map<string, RootedFs>();
  const touched = new Map<string, { fs: RootedFs; dir: string }>();
  const touch = (fs: RootedFs, path: string) => touched.set(`${fs.root}\0${posix.dirname(path)}`, { fs, dir: posix.dirname(path) });
  try {
    for (const intent of intents) {
      // Reached through the same pinned, link-refusing walk as the writes: a link planted since is not followed.
      const fs = roots.get(intent.root) ?? new RootedFs(intent.root);
      roots.set(intent.root, fs);
      for (const entry of intent.entries) {
        if (entry.temporary !== undefined && removeIfFile(fs, entry.path, entry.temporary) === 'removed') {
          result.temporaries++;
          touch(fs, entry.path);
        }
        if (entry.creates) {
          if (claimed.has(entry.path)) result.kept++;
          else made.push({ fs, entry });
        }
      }
    }
    // Deepest first, so a directory is empty of what the batch made inside it when its turn comes.
    made.sort((a, b) => b.entry.path.split('/').length - a.entry.path.split('/').length);
    for (const { fs, entry } of made) {
      const outcome = entry.directory ? removeIfEmptyDirectory(fs, entry.path) : removeIfFile(fs, entry.path);
      if (outcome === 'removed') {
        result.undone++;
        touch(fs, entry.path);
      } else if (outcome === 'left') result.left.push(entry.path);
    }
    for (const { fs, dir } of touched.values()) {
      const name = fs.pinned(dir === '/' ? '/.' : `${dir}/.`);
      if (name === undefined) continue;
      const fd = openSync(name, 'r');
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    }
  } finally {
    for (const fs of roots.values()) fs.close();
  }
  store.clearIntents();
  if (result.temporaries + result.undone + result.left.length > 0) {
    log.warn(
      { ...result },
      `an apply was cut short: removed ${result.temporaries} temporary file${result.temporaries === 1 ? '' : 's'} from target directories, undid ${result.undone} path${result.undone === 1 ? '' : 's'} it made that the store never recorded, kept ${result.kept} it recorded` +
        (result.left.length > 0 ? `; left ${result.left.length} (filled or changed by others since): ${result.left.slice(0, 5).join(', ')}` : ''),
    );
  }
  return result;
}

/** Every path the store claims: the targets of its records, and what its archives unpacked. */
function claimedPaths(store: Store): Set<string> {
  const claimed = new Set<string>();
  const records = store.state.records;
  for (const id in records) {
    const record = records[id]!;
    claimed.add(record.target);
    for (const rel of record.unpacked ?? []) claimed.add(posix.join(record.target, rel));
  }
  return claimed;
}

function removeIfFile(fs: RootedFs, path: string, sibling?: string): 'removed' | 'absent' | 'left' {
  let name: string | undefined;
  try {
    name = fs.pinned(path, sibling);
  } catch (err) {
    if (err instanceof PathRefused) return 'left';
    throw err;
  }
  if (name === undefined) return 'absent';
  try {
    if (lstatSync(name).isDirectory()) return 'left';
    unlinkSync(name);
    return 'removed';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw err;
  }
}

function removeIfEmptyDirectory(fs: RootedFs, path: string): 'removed' | 'absent' | 'left' {
  let name: string | undefined;
  try {
    name = fs.pinned(path);
  } catch (err) {
    if (err instanceof PathRefused) return 'left';
    throw err;
  }
  if (name === undefined) return 'absent';
  try {
    if (!lstatSync(name).isDirectory()) return 'left';
    rmdirSync(name);
    fs.forgetDirectory(path);
    return 'removed';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'absent';
    if (code === 'ENOTEMPTY' || code === 'EEXIST') return 'left';
    throw err;
  }
}

function isIntent(value: unknown): value is Intent {
  return typeof value === 'object' && value !== null && typeof (value as Intent).root === 'string' && Array.isArray((value as Intent).entries);
}
