import { watch, type FSWatcher, type Stats } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { realPaths } from '../../core/declaration/real-paths.js';
import type { Logger } from '../../core/system/log.js';
import type { Finding, Watcher } from '../../engine/converge/watch-finding.js';

/** A file or directory the host owns, as declared (the path) and where it is on disk (under the root). */
export interface Owned {
  target: string;
  type: 'file' | 'directory';
}

export interface FootprintWatchOptions {
  owned: readonly Owned[];
  /** Declared paths are taken inside this folder (`--root`). */
  root: string;
  /** Events of one burst are gathered this long before the paths are looked at (default 200 ms). */
  settleMs?: number;
  /** The first look waits this long after the folders are watched (default: it starts at once). */
  firstLookAfterMs?: number;
  onFound(found: Finding[]): void;
  log: Logger;
}

/** What the watcher compares: enough to tell content, mode, owner and removal apart. */
interface Look {
  kind: 'file' | 'directory' | 'other';
  ino: number;
  size: number;
  mtimeMs: number;
  mode: number;
  uid: number;
  gid: number;
}

const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, '0');

/** How many paths are looked at at once: enough to keep libuv's threads busy, few enough to leave room for the rest. */
const LOOKS_AT_ONCE = 16;

async function lookAt(path: string): Promise<Look | undefined> {
  let st: Stats;
  try {
    st = await lstat(path);
  } catch {
    return undefined;
  }
  return { kind: st.isFile() ? 'file' : st.isDirectory() ? 'directory' : 'other', ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, mode: st.mode & 0o7777, uid: st.uid, gid: st.gid };
}

/** What changed at one owned path since the last look, said as drift; or nothing. */
export function driftOf(owned: Owned, before: Look | undefined, now: Look | undefined): string | undefined {
  const at = owned.target;
  if (!before && !now) return undefined;
  if (!now) return `drift: ${at} removed`;
  if (!before) return `drift: ${at} appeared`;
  if (now.kind !== before.kind) return `drift: ${at} is now a${now.kind === 'other' ? 'nother kind of entry' : ` ${now.kind}`}`;
  const changes: string[] = [];
  // A directory's own size and mtime move when its entries do: only what the host declared of it counts.
  if (owned.type === 'file' && (now.ino !== before.ino || now.size !== before.size || now.mtimeMs !== before.mtimeMs)) changes.push('content changed');
  if (now.mode !== before.mode) changes.push(`mode ${octal(before.mode)}→${octal(now.mode)}`);
  if (now.uid !== before.uid || now.gid !== before.gid) changes.push(`owner ${before.uid}:${before.gid}→${now.uid}:${now.gid}`);
  return changes.length > 0 ? `drift: ${at} ${changes.join(', ')}` : undefined;
}

/** Looks at every path given, a few at a time off the event loop (an lstat each, on libuv's threads). */
async function lookAtAll(paths: readonly Owned[], real: (target: string) => string, into: (owned: Owned, look: Look | undefined) => void, closed: () => boolean): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < paths.length && !closed()) {
      const owned = paths[next++]!;
      into(owned, await lookAt(real(owned.target)));
    }
  };
  await Promise.all(Array.from({ length: Math.min(LOOKS_AT_ONCE, paths.length) }, lane));
}

export interface FootprintWatcher extends Watcher {
  /** Settles once the first look is taken: from then on every change is compared with it. */
  readonly looked: Promise<void>;
}

/**
 * Watches what the host owns, between applies, through inotify (`fs.watch`) on the folders that hold
 * it: one watch a folder, not a file, so a thousand files in a few folders cost a few watches. Events of
 * a burst are gathered, then only the paths they name are looked at again and compared with the last
 * look; a change is said once as drift, and the watcher asks for a reconcile.
 *
 * The watcher starts right after an apply: the apply's own writes are the baseline, never news. The
 * folders are watched first, then the first look is taken off the event loop (10,000 lstats hold it for
 * none of their time). A path heard of before the whole first look is done may hold an edit in its look
 * (the lstat may run just after the edit, and its answer come before the edit's event): it is said as
 * drift whatever the look shows, so no edit made after the apply becomes the baseline.
 */
export function watchFootprint(options: FootprintWatchOptions): FootprintWatcher {
  const real = realPaths(options.root);
  const byFolder = foldersOf(options.owned, real);
  const last = new Map<string, Look | undefined>();
  let closed = false;
  /** Paths named by an event before the first look was done: their look may already hold the change. */
  const heardEarly = new Set<Owned>();
  let firstLookDone = false;
  const dirty = new Set<Owned>();
  let settle: NodeJS.Timeout | undefined;
  let flushing = false;
  const schedule = () => {
    if (firstLookDone && !flushing && dirty.size > 0) settle ??= setTimeout(() => void flush(), options.settleMs ?? 200);
  };
  // One flush at a time, its looks off the event loop; what is heard meanwhile waits for the next.
  const flush = async () => {
    settle = undefined;
    if (closed) return;
    flushing = true;
    const batch = [...dirty];
    dirty.clear();
    const found: Finding[] = [];
    await lookAtAll(batch, real, (owned, now) => {
      const message = driftOf(owned, last.get(owned.target), now) ?? (heardEarly.has(owned) ? `drift: ${owned.target} changed as the watch began` : undefined);
      heardEarly.delete(owned);
      last.set(owned.target, now);
      if (message) found.push({ kind: 'drift', target: owned.target, message });
    }, () => closed);
    flushing = false;
    if (closed) return;
    if (found.length > 0) options.onFound(found);
    schedule();
  };
  const heard = (folder: string, name: string | null) => {
    const names = byFolder.get(folder)!;
    const mark = (o: Owned) => {
      dirty.add(o);
      if (!firstLookDone) heardEarly.add(o);
    };
    const owned = name ? names.get(name) : undefined;
    if (owned) mark(owned);
    // A directory's own change, or an event without a name (the folder itself): look at all it holds.
    const self = names.get('');
    if (self) dirty.add(self);
    if (!name) for (const o of names.values()) mark(o);
    // A folder such as /etc hears much that is not the host's: only a path it owns starts a look.
    schedule();
  };

  const watchers = watchFolders(byFolder, heard, (owned) => dirty.add(owned), options.log);
  // Done one turn after the last lstat's answer: an edit made before an lstat read it was queued by inotify
  // before that answer came, so its event is heard in the same poll of the loop, before this turn, and
  // counted as heard early, never compared with a look that may already hold it.
  const lookFirst = () =>
    lookAtAll(options.owned, real, (owned, look) => void last.set(owned.target, look), () => closed)
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(() => {
        firstLookDone = true;
        schedule();
      });
  // A first look put off is safe: every change from now on is heard, and a path heard before its look is drift whatever the look shows.
  let startLooking: (() => void) | undefined;
  const later = options.firstLookAfterMs ? new Promise<void>((resolve) => (startLooking = resolve)) : undefined;
  const firstLookTimer = later && setTimeout(() => startLooking?.(), options.firstLookAfterMs);
  const looked = later ? later.then(lookFirst) : lookFirst();
  return {
    looked,
    close() {
      closed = true;
      if (firstLookTimer) clearTimeout(firstLookTimer);
      startLooking?.();
      if (settle) clearTimeout(settle);
      for (const w of watchers) w.close();
    },
  };
}

/**
 * Owned paths by the folder whose watch hears of them (their parent), and by their own path for
 * directories. 10,000 paths, in the turn the apply ended in: plain string work (path.join and dirname
 * normalise each path again, and held the daemon's loop 100-200 ms on a loaded machine).
 */
function foldersOf(owned: readonly Owned[], real: (target: string) => string): Map<string, Map<string, Owned>> {
  const byFolder = new Map<string, Map<string, Owned>>();
  const listen = (folder: string, name: string, o: Owned) => {
    let names = byFolder.get(folder);
    if (!names) byFolder.set(folder, (names = new Map()));
    names.set(name, o);
  };
  for (const o of owned) {
    const path = real(o.target);
    const cut = path.lastIndexOf('/');
    listen(cut > 0 ? path.slice(0, cut) : '/', path.slice(cut + 1), o);
    // A directory's own watch hears a change of its mode with an empty or its own name.
    if (o.type === 'directory') listen(path, '', o);
  }
  return byFolder;
}

/** One inotify watch a folder; a folder that cannot be watched has its paths looked at at once. */
function watchFolders(byFolder: Map<string, Map<string, Owned>>, heard: (folder: string, name: string | null) => void, lookAgain: (owned: Owned) => void, log: Logger): FSWatcher[] {
  const watchers: FSWatcher[] = [];
  for (const folder of byFolder.keys()) {
    try {
      const w = watch(folder, { persistent: false }, (_event, name) => heard(folder, name === null ? null : String(name)));
      w.on('error', () => heard(folder, null));
      watchers.push(w);
    } catch (err) {
      // A folder that is gone: its paths are drift for the reconcile to repair; said now.
      log.debug({ folder, err: (err as Error).message }, 'watch: a folder could not be watched');
      for (const owned of byFolder.get(folder)!.values()) lookAgain(owned);
    }
  }
  return watchers;
}
