import { watch, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import type { DeferredLock } from '../../../machines/lifecycle.js';
import { type LockReader } from '../../engine/inhibit/inhibit-lock.js';
import { realPaths } from '../../core/declaration/real-paths.js';
import type { ResourceRecord } from '../../core/store/state.js';
import type { Clock } from '../../core/system/clock.js';
import type { Logger } from '../../core/system/log.js';

/** A lock is looked at this often besides the watch of its folder: a holder's death makes no file event. */
export const LOCK_POLL_MS = 250;

/** A lock let go, as the watcher tells it: whose, which, and how. */
export interface Released {
  resource: string;
  lock: string;
  why: 'gone' | 'dead';
}

/**
 * The steps the records keep held off for a lock, with how long each may still wait at nowMs. `heldSince`:
 * only those an apply that began then found held (what an apply that failed before reaching a step kept
 * from earlier is not watched again: its lock may be free, and watching it would ask for apply after apply).
 */
export function deferredLocks(records: Readonly<Record<string, ResourceRecord>>, nowMs: number, heldSince?: string): DeferredLock[] {
  const locks: DeferredLock[] = [];
  for (const id in records) {
    const waiting = records[id]!.deferred;
    if (waiting === undefined || (heldSince !== undefined && waiting.checked < heldSince)) continue;
    locks.push({ resource: id, lock: waiting.lock, endsInMs: Date.parse(waiting.since) + waiting.maxMs - nowMs });
  }
  return locks;
}

/**
 * Watches the locks of the steps held off and tells the first one let go (its file gone, or its holder
 * dead), once: the lifecycle then asks for the apply that does what waited, and that apply says what
 * still waits. Each lock's folder is watched when it exists (a removal is heard at once), and every lock
 * is read again every LOCK_POLL_MS. It decides nothing. Returns the stop.
 */
export function watchLocks(root: string, locks: DeferredLock[], read: LockReader, clock: Clock, log: Logger, tell: (released: Released) => void): () => void {
  let closed = false;
  let cancelPoll: (() => void) | undefined;
  const watchers: FSWatcher[] = [];
  const stop = () => {
    closed = true;
    cancelPoll?.();
    for (const w of watchers) w.close();
  };
  const look = () => {
    if (closed) return;
    cancelPoll?.();
    for (const { resource, lock } of locks) {
      const seen = read(lock);
      if (seen.kind === 'held') continue;
      stop();
      return tell({ resource, lock, why: seen.kind === 'free' ? 'gone' : 'dead' });
    }
    cancelPoll = clock.after(LOCK_POLL_MS, look);
  };
  const real = realPaths(root);
  for (const dir of new Set(locks.map((l) => dirname(real(l.lock))))) {
    try {
      const watcher = watch(dir, () => look());
      watcher.on('error', () => watcher.close());
      watchers.push(watcher);
    } catch (err) {
      // A folder that is not there holds no lock: the first look finds it free.
      log.debug({ dir, err: (err as Error).message }, 'lock: its folder cannot be watched; it is read every 250 ms');
    }
  }
  look();
  return stop;
}
