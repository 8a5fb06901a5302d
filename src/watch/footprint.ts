import { lstatSync, watch, type FSWatcher, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Logger } from '../system/log.js';
import type { Finding, Watcher } from './finding.js';

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

function lookAt(path: string): Look | undefined {
  let st: Stats;
  try {
    st = lstatSync(path);
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

/**
 * Watches what the host owns, between applies, through inotify (`fs.watch`) on the folders that hold
 * it: one watch a folder, not a file, so a thousand files in a few folders cost a few watches. Events of
 * a burst are gathered, then only the paths they name are looked at again and compared with the last
 * look; a change is said once as drift, and the watcher asks for a reconcile. The first look is taken
 * when the watcher starts, right after an apply: the apply's own writes are the baseline, never news.
 */
export function watchFootprint(options: FootprintWatchOptions): Watcher {
  const { root, log } = options;
  const real = (target: string) => join(root, target);
  /** Owned paths by the folder whose watch hears of them (their parent), and by their own path for directories. */
  const byFolder = new Map<string, Map<string, Owned>>();
  const listen = (folder: string, name: string, owned: Owned) => {
    let names = byFolder.get(folder);
    if (!names) byFolder.set(folder, (names = new Map()));
    names.set(name, owned);
  };
  const last = new Map<string, Look | undefined>();
  for (const owned of options.owned) {
    const path = real(owned.target);
    listen(dirname(path), path.slice(dirname(path).length + 1), owned);
    // A directory's own watch hears a change of its mode with an empty or its own name.
    if (owned.type === 'directory') listen(path, '', owned);
    last.set(owned.target, lookAt(path));
  }

  let closed = false;
  const dirty = new Set<Owned>();
  let settle: NodeJS.Timeout | undefined;
  const flush = () => {
    settle = undefined;
    if (closed) return;
    const found: Finding[] = [];
    for (const owned of dirty) {
      const now = lookAt(real(owned.target));
      const message = driftOf(owned, last.get(owned.target), now);
      last.set(owned.target, now);
      if (message) found.push({ kind: 'drift', target: owned.target, message });
    }
    dirty.clear();
    if (found.length > 0) options.onFound(found);
  };
  const heard = (folder: string, name: string | null) => {
    const names = byFolder.get(folder)!;
    const owned = name ? names.get(name) : undefined;
    if (owned) dirty.add(owned);
    // A directory's own change, or an event without a name (the folder itself): look at all it holds.
    const self = names.get('');
    if (self) dirty.add(self);
    if (!name) for (const o of names.values()) dirty.add(o);
    // A folder such as /etc hears much that is not the host's: only a path it owns starts a look.
    if (dirty.size > 0) settle ??= setTimeout(flush, options.settleMs ?? 200);
  };

  const watchers: FSWatcher[] = [];
  for (const folder of byFolder.keys()) {
    try {
      const w = watch(folder, { persistent: false }, (_event, name) => heard(folder, name === null ? null : String(name)));
      w.on('error', () => heard(folder, null));
      watchers.push(w);
    } catch (err) {
      // A folder that is gone: its paths are drift for the reconcile to repair; said now.
      log.debug({ folder, err: (err as Error).message }, 'watch: a folder could not be watched');
      for (const owned of byFolder.get(folder)!.values()) dirty.add(owned);
      settle ??= setTimeout(flush, options.settleMs ?? 200);
    }
  }
  return {
    close() {
      closed = true;
      if (settle) clearTimeout(settle);
      for (const w of watchers) w.close();
    },
  };
}
