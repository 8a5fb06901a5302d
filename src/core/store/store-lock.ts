import { closeSync, constants, existsSync, linkSync, openSync, readdirSync, readFileSync, rmdirSync, mkdirSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { refused } from '../system/errors.js';

export const LOCK_FILE = 'lock';

/** Who holds the lock: enough to tell a live holder from a crashed one, and to name it. */
export interface LockHolder {
  pid: number;
  /** The holder's start time in clock ticks since boot (/proc/PID/stat field 22), against PID reuse. */
  startTicks: number;
  bootId: string;
  command: string;
  since: string;
}

export interface HeldLock {
  holder: LockHolder;
  release(): void;
}

export interface LockOptions {
  command: string;
  /** Give up after this long, naming the holder (exit 3). */
  timeoutMs?: number;
  pollMs?: number;
  /** Another lock beside the state (the launcher's own, against a second launcher); the host's lock by default. */
  file?: string;
}

function readBootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown';
  }
}

function startTicksOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  } catch {
    return undefined;
  }
}

/** This process's boot and start, read once: neither changes while it runs, and a daemon takes the lock every apply. */
let own: { bootId: string; startTicks: number } | undefined;
function ownFacts(): { bootId: string; startTicks: number } {
  own ??= { bootId: readBootId(), startTicks: startTicksOf(process.pid) ?? 0 };
  return own;
}

/** A holder is alive when its boot is this boot and its PID still names the same process. */
export function holderIsAlive(holder: LockHolder, bootId = ownFacts().bootId): boolean {
  if (holder.bootId !== bootId) return false;
  const ticks = startTicksOf(holder.pid);
  return ticks !== undefined && ticks === holder.startTicks;
}

function readHolder(path: string): LockHolder | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as LockHolder;
  } catch {
    return undefined;
  }
}

function describeHolder(holder: LockHolder | undefined): string {
  return holder ? `pid ${holder.pid} (${holder.command}, since ${holder.since})` : 'an unknown process';
}

/**
 * The lock beside the state, taken by every process of the host before it applies or saves. It is
 * a file made by link(2), which is atomic; a holder that crashed is noticed at once (its PID is gone
 * or names another process) and its lock is taken over, so a crash blocks the next one not at all.
 */
export async function acquireLock(stateDir: string, options: LockOptions): Promise<HeldLock> {
  const path = join(stateDir, options.file ?? LOCK_FILE);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const pollMs = options.pollMs ?? 50;
  const { bootId, startTicks } = ownFacts();
  const holder: LockHolder = {
    pid: process.pid,
    startTicks,
    bootId,
    command: options.command,
    since: new Date().toISOString(),
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (tryLink(path, holder)) {
      removeDeadTakersLeftovers(path);
      let released = false;
      return {
        holder,
        release() {
          if (released) return;
          released = true;
          const current = readHolder(path);
          if (current?.pid === holder.pid && current.startTicks === holder.startTicks) unlinkSync(path);
        },
      };
    }
    const current = readHolder(path);
    if (current === undefined || !holderIsAlive(current, bootId)) {
      takeOverStale(path, current);
      continue;
    }
    if (Date.now() >= deadline) {
      throw refused(`the lock ${path} is held by ${describeHolder(current)}; gave up after ${timeoutMs} ms`, [
        'another mesh-host process is applying or saving; try again when it has finished',
      ]);
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

function tryLink(path: string, holder: LockHolder): boolean {
  const temporary = `${path}.${process.pid}-${randomBytes(4).toString('hex')}`;
  const fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, JSON.stringify(holder));
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temporary, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkSync(temporary);
  }
}

/**
 * What takers that died mid-take left beside the lock, removed by the next holder: a temporary
 * (`lock.PID-RANDOM`) whose process is gone, a takeover guard older than a second. A live taker's
 * temporary is its own, and lasts a moment.
 */
function removeDeadTakersLeftovers(path: string): void {
  const dir = dirname(path);
  const prefix = `${basename(path)}.`;
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(prefix)) continue;
    const pid = /^(\d+)-[0-9a-f]{8}$/.exec(name.slice(prefix.length))?.[1];
    try {
      if (pid !== undefined && !existsSync(`/proc/${pid}`)) unlinkSync(join(dir, name));
      else if (name === `${prefix}takeover` && Date.now() - statSync(join(dir, name)).mtimeMs > 1000) rmdirSync(join(dir, name));
    } catch {
      // removed by another, or taken again
    }
  }
}

/**
 * Removes a dead holder's lock. Two takers could otherwise both see it dead and the second remove
 * the first one's fresh lock; a takeover guard (mkdir, atomic) lets one at a time re-read and remove.
 */
function takeOverStale(path: string, seen: LockHolder | undefined): void {
  const guard = `${path}.takeover`;
  try {
    mkdirSync(guard, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // A taker that crashed inside the guard leaves it: it is stale after a second.
    try {
      if (Date.now() - statSync(guard).mtimeMs > 1000) rmdirSync(guard);
    } catch {
      // gone already
    }
    return;
  }
  try {
    const current = readHolder(path);
    const same = current === undefined ? seen === undefined : seen !== undefined && current.pid === seen.pid && current.startTicks === seen.startTicks;
    if (same) {
      try {
        unlinkSync(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
  } finally {
    rmdirSync(guard);
  }
}
