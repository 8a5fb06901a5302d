import { closeSync, constants, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { realPaths } from '../../core/declaration/real-paths.js';

/**
 * What a lock file says now: nobody holds it (no file), a live holder since the file's mtime, or a
 * holder that is gone (its PID dead, or no PID to be read), which counts for nothing.
 */
export type LockLook = { kind: 'free' } | { kind: 'held'; pid: number; since: string } | { kind: 'stale'; pid?: number; why: 'dead' | 'unreadable' };

/** Reads a lock named by its path on the host (under the host's root). */
export type LockReader = (path: string) => LockLook;

/** A PID is written in a few bytes: more than this is not a lock file. */
const MAX_LOCK_BYTES = 64;

/** Whether a process lives: signal 0 asks without sending; a zombie has ended and only waits for its parent. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

/**
 * The reader of locks under a root: the file is opened without following a link at its last component
 * and read once (a few bytes, synchronously: one read per locked resource per apply). `alive` is asked
 * of the PID written in it.
 */
export function lockReader(root: string, alive: (pid: number) => boolean = pidAlive): LockReader {
  const real = realPaths(root);
  return (path) => {
    let fd: number;
    try {
      fd = openSync(real(path), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return code === 'ENOENT' || code === 'ENOTDIR' ? { kind: 'free' } : { kind: 'stale', why: 'unreadable' };
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) return { kind: 'stale', why: 'unreadable' };
      const buffer = Buffer.alloc(MAX_LOCK_BYTES);
      const text = buffer.subarray(0, readSync(fd, buffer, 0, MAX_LOCK_BYTES, 0)).toString('latin1').trim();
      const pid = /^[0-9]{1,10}$/.test(text) ? Number(text) : 0;
      if (pid < 1 || pid > 4_194_304) return { kind: 'stale', why: 'unreadable' };
      if (!alive(pid)) return { kind: 'stale', pid, why: 'dead' };
      return { kind: 'held', pid, since: st.mtime.toISOString() };
    } catch {
      return { kind: 'stale', why: 'unreadable' };
    } finally {
      closeSync(fd);
    }
  };
}
