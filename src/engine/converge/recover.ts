import { constants } from 'node:fs';
import { lstat, open, readFile, rename, rmdir, unlink } from 'node:fs/promises';
import { posix } from 'node:path';
import type { Store } from '../../core/store/store.js';
import type { Logger } from '../../core/system/log.js';
import { yielder } from '../../core/system/yielder.js';
import { PathRefused, RootedFs } from './rooted-fs.js';
import type { Intent, IntentEntry } from './write-commit.js';
import type { TakenOriginal } from './write-ops.js';

export interface Recovered {
  /** Temporary files of a batch cut short, removed from their target directories. */
  temporaries: number;
  /** Paths a batch made that the store never recorded (the save after it was cut off), removed again. */
  undone: number;
  /** Paths a batch made that the store recorded: kept. */
  kept: number;
  /** Paths that could not be undone (filled by others since, or refused): left, and said. */
  left: string[];
  /** Things the cut apply was taking over that the store never recorded: given back as they were found. */
  givenBack: number;
}

/**
 * At start, under the lock: every path an interrupted apply may have made is finished or undone. A
 * temporary file is removed; a file or directory made where nothing stood is kept when the store
 * records it (the apply's save happened) and removed when it does not (the save never came: nobody
 * would ever remove it). Directories go deepest first, and only when empty. Says how many, aloud.
 * The removals wait on libuv's threads and the walk yields now and then: a daemon that recovers a
 * cut 10,000-file apply keeps answering.
 */
export async function recoverIntents(store: Store, log: Logger): Promise<Recovered> {
  const result: Recovered = { temporaries: 0, undone: 0, kept: 0, left: [], givenBack: 0 };
  const intents = store.pendingIntents.filter(isIntent);
  if (store.pendingIntents.length === 0) {
    // Nothing named, but perhaps a line a power cut tore: emptied before the next apply appends to it.
    store.clearIntents();
    return result;
  }
  const claimed = claimedPaths(store);
  const made: Array<{ fs: RootedFs; entry: IntentEntry }> = [];
  const roots = new Map<string, RootedFs>();
  const touched = new Map<string, { fs: RootedFs; dir: string }>();
  const touch = (fs: RootedFs, path: string) => touched.set(`${fs.root}\0${posix.dirname(path)}`, { fs, dir: posix.dirname(path) });
  const pause = yielder();
  try {
    for (const intent of intents) {
      // Reached through the same pinned, link-refusing walk as the writes: a link planted since is not followed.
      const fs = roots.get(intent.root) ?? new RootedFs(intent.root);
      roots.set(intent.root, fs);
      for (const entry of intent.entries) {
        await pause();
        if (entry.temporary !== undefined && (await removeIfFile(fs, entry.path, entry.temporary)) === 'removed') {
          result.temporaries++;
          touch(fs, entry.path);
        }
        if (entry.creates) {
          if (claimed.has(entry.path)) result.kept++;
          else made.push({ fs, entry });
        } else if (entry.original && !claimed.has(entry.path)) {
          // Taken over, and the save that records the original never came: the next apply would take
          // what this one wrote as the original. It is given back now, as it was found.
          const outcome = await giveBack(fs, entry.path, entry.original, entry.directory === true);
          if (outcome === 'given back') {
            result.givenBack++;
            touch(fs, entry.path);
          } else if (outcome === 'left') result.left.push(entry.path);
        }
      }
    }
    // Deepest first, so a directory is empty of what the batch made inside it when its turn comes.
    made.sort((a, b) => b.entry.path.split('/').length - a.entry.path.split('/').length);
    for (const { fs, entry } of made) {
      await pause();
      const outcome = entry.directory ? await removeIfEmptyDirectory(fs, entry.path) : await removeIfFile(fs, entry.path);
      if (outcome === 'removed') {
        result.undone++;
        touch(fs, entry.path);
      } else if (outcome === 'left') result.left.push(entry.path);
    }
    for (const { fs, dir } of touched.values()) {
      const name = fs.pinned(dir === '/' ? '/.' : `${dir}/.`);
      if (name !== undefined) await fsyncPath(name, constants.O_RDONLY | constants.O_DIRECTORY);
    }
  } finally {
    for (const fs of roots.values()) fs.close();
  }
  store.clearIntents();
  if (result.temporaries + result.undone + result.givenBack + result.left.length > 0) {
    log.warn(
      { ...result },
      `an apply was cut short: removed ${result.temporaries} temporary file${result.temporaries === 1 ? '' : 's'} from target directories, undid ${result.undone} path${result.undone === 1 ? '' : 's'} it made that the store never recorded, kept ${result.kept} it recorded` +
        (result.givenBack > 0 ? `, gave back ${result.givenBack} original${result.givenBack === 1 ? '' : 's'} it was taking over` : '') +
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

async function fsyncPath(name: string, flags: number): Promise<void> {
  const handle = await open(name, flags);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Where a path is, reached without following a link: 'absent' when nothing is there, 'left' when it cannot be reached so. */
function pinnedOrWhy(fs: RootedFs, path: string, sibling?: string): string | 'absent' | 'left' {
  try {
    return fs.pinned(path, sibling) ?? 'absent';
  } catch (err) {
    if (err instanceof PathRefused) return 'left';
    throw err;
  }
}

async function removeIfFile(fs: RootedFs, path: string, sibling?: string): Promise<'removed' | 'absent' | 'left'> {
  const name = pinnedOrWhy(fs, path, sibling);
  if (name === 'left' || name === 'absent') return name;
  try {
    if ((await lstat(name)).isDirectory()) return 'left';
    await unlink(name);
    return 'removed';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw err;
  }
}

async function removeIfEmptyDirectory(fs: RootedFs, path: string): Promise<'removed' | 'absent' | 'left'> {
  const name = pinnedOrWhy(fs, path);
  if (name === 'left' || name === 'absent') return name;
  try {
    if (!(await lstat(name)).isDirectory()) return 'left';
    await rmdir(name);
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

/**
 * Puts back what a cut apply was taking over: a file's kept copy written back atomically (a temporary
 * beside it, owner and mode, fsync, rename) and the copy removed; a directory's mode and owner set back.
 */
async function giveBack(fs: RootedFs, path: string, original: TakenOriginal, directory: boolean): Promise<'given back' | 'absent' | 'left'> {
  const name = pinnedOrWhy(fs, path);
  if (name === 'left' || name === 'absent') return name;
  if (original.copy === undefined) {
    const handle = await open(name, directory ? constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW : constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      await handle.chown(original.uid, original.gid);
      await handle.chmod(original.mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    return 'given back';
  }
  let content: Buffer;
  try {
    content = await readFile(original.copy);
  } catch (err) {
    // Given back already (a recovery cut short itself): nothing left to do.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw err;
  }
  const temporary = fs.pinned(path, `.${posix.basename(path)}.mesh-host-given-back`)!;
  const handle = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o600);
  try {
    await handle.writeFile(content);
    await handle.chown(original.uid, original.gid);
    await handle.chmod(original.mode);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, name);
  // The rename durable before the copy goes: a crash between must not lose both.
  await fsyncPath(fs.pinned(path, '.')!, constants.O_RDONLY | constants.O_DIRECTORY);
  await unlink(original.copy);
  return 'given back';
}
