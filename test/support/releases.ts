import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectDir } from './cli.js';

/**
 * Single executables of this checkout, made by the release script (`--host-only`), kept in the
 * temporary folder under a digest of the sources so that test files and later runs share them.
 */
function sourcesDigest(): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const name of readdirSync(join(projectDir, dir)).sort()) {
      const rel = join(dir, name);
      if (statSync(join(projectDir, rel)).isDirectory()) walk(rel);
      else hash.update(rel).update(readFileSync(join(projectDir, rel)));
    }
  };
  for (const dir of ['src', 'machines']) walk(dir);
  for (const file of ['scripts/release.mjs', 'package-lock.json']) hash.update(readFileSync(join(projectDir, file)));
  return hash.digest('hex').slice(0, 16);
}

/** Waits while another test process builds the same sources (one build per CI run, shared by the test files). */
function withBuildLock<T>(dir: string, fn: () => T): T {
  const lock = `${dir}.lock`;
  mkdirSync(join(dir, '..'), { recursive: true });
  for (;;) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(readFileSync(lock, 'utf8'));
      if (Number.isInteger(holder) && holder > 0 && !alive(holder)) rmSync(lock, { force: true });
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { force: true });
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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The path of a mesh-host single executable that says it is `version` (and, for a test build, fails as asked). */
export function releaseBuild(version: string, fault?: 'start' | 'apply'): string {
  const dir = join(tmpdir(), `mesh-host-releases-${sourcesDigest()}`, `${version}${fault ? `-${fault}` : ''}`);
  const executable = join(dir, 'mesh-host');
  if (existsSync(executable)) return executable;
  return withBuildLock(dir, () => {
    if (existsSync(executable)) return executable;
    const making = `${dir}.making-${process.pid}`;
    rmSync(making, { recursive: true, force: true });
    const made = spawnSync(process.execPath, ['scripts/release.mjs', '--host-only', '--version', version, '--out', making, ...(fault ? ['--fault', fault] : [])], { cwd: projectDir, encoding: 'utf8', timeout: 600_000 });
    if (made.status !== 0) throw new Error(`the release script failed (${made.status ?? made.signal}):\n${made.stderr}`);
    renameSync(making, dir);
    // Builds of older sources are of no use any more (each is some 90 MB): those untouched for a day go.
    // A younger one may be another checkout's, building or in use by its tests at this very moment.
    for (const name of readdirSync(tmpdir())) {
      const other = join(tmpdir(), name);
      if (name.startsWith('mesh-host-releases-') && other !== join(dir, '..') && untouchedFor(other, STALE_BUILD_MS)) rmSync(other, { recursive: true, force: true });
    }
    return executable;
  });
}
