import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Things the tests build once and keep in the temporary folder for later runs (single executables, a
 * fresh Debian tree): one builder at a time, and builds no run has used for a day removed.
 */

/** Waits while another test process builds the same thing (one build per CI run, shared by the test files). */
export function withBuildLock<T>(dir: string, fn: () => T): T {
  const lock = `${dir}.lock`;
  while (!tookLock(lock)) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
  try {
    return fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

/** withBuildLock for a build that runs as a child process, so that the test process goes on meanwhile. */
export async function withBuildLockAsync<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const lock = `${dir}.lock`;
  while (!tookLock(lock)) await new Promise((resolve) => setTimeout(resolve, 500));
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

/** Takes the lock file, or removes it when the process that took it is gone; false while another holds it. */
function tookLock(lock: string): boolean {
  mkdirSync(join(lock, '..'), { recursive: true });
  try {
    writeFileSync(lock, String(process.pid), { flag: 'wx' });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const holder = Number(readFileSync(lock, 'utf8'));
    if (Number.isInteger(holder) && holder > 0 && !alive(holder)) rmSync(lock, { force: true });
    return false;
  }
}

const STALE_BUILD_MS = 24 * 60 * 60 * 1000;

/** Nothing in the folder (or the folder itself) changed for this long. */
function untouchedFor(dir: string, ms: number): boolean {
  try {
    const times = [statSync(dir).mtimeMs, ...readdirSync(dir).map((name) => statSync(join(dir, name)).mtimeMs)];
    return Date.now() - Math.max(...times) > ms;
  } catch {
    return false;
  }
}

/**
 * Removes the other builds named `prefix…` in `parent` (the temporary folder unless named) that nothing
 * touched for a day: builds of older inputs are of no use any more; a younger one may be another
 * checkout's, in use this moment.
 */
export function dropStaleBuilds(prefix: string, kept: string, parent = tmpdir()): void {
  for (const name of readdirSync(parent)) {
    const other = join(parent, name);
    if (name.startsWith(prefix) && other !== kept && untouchedFor(other, STALE_BUILD_MS)) rmSync(other, { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
