import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { projectDir } from './cli.js';
import { leaks, pathsUnder } from './leaks.js';

/**
 * A scratch root and state directory, a declaration of `files` files (in `dirs` directories under
 * /srv/app) and one that drops them all: for killing `mesh-host apply` mid-way and proving that the
 * next apply leaves nothing behind that the store does not account for.
 */
export interface CrashScene {
  root: string;
  state: string;
  full: string;
  empty: string;
  /** What the root held before the host came (see leaks). */
  found: ReadonlySet<string>;
  /** The arguments of `mesh-host apply` for a declaration file. */
  args(declaration: string): string[];
}

export function crashScene(dir: string, files: number, dirs = 10): CrashScene {
  const root = join(dir, 'root');
  const state = join(dir, 'state');
  mkdirSync(join(root, 'srv'), { recursive: true });
  const resources: object[] = [{ type: 'directory', id: 'app', path: '/srv/app' }];
  for (let d = 0; d < dirs; d++) resources.push({ type: 'directory', id: `d${d}`, path: `/srv/app/d${d}` });
  for (let i = 0; i < files; i++) resources.push({ type: 'file', id: `f${i}`, path: `/srv/app/d${i % dirs}/f${i}.conf`, content: `key = ${i}\n`.repeat(20) });
  const full = join(dir, 'full.json');
  const empty = join(dir, 'empty.json');
  writeFileSync(full, JSON.stringify({ version: 1, node: 'crash', mode: 'converged', sequence: 1, resources }));
  writeFileSync(empty, JSON.stringify({ version: 1, node: 'crash', mode: 'converged', sequence: 1, resources: [] }));
  writeFileSync(join(dir, 'host.json'), JSON.stringify({ node: 'crash' }));
  return {
    root,
    state,
    full,
    empty,
    found: pathsUnder(root),
    args: (declaration) => [join(projectDir, 'bin/mesh-host'), 'apply', declaration, '--root', root, '--state-dir', state, '--config', join(dir, 'host.json'), '--log-level', 'warn', '--json'],
  };
}

/** What the scene's root and state directory hold that the store does not account for (see leaks). */
export function leftBehind(scene: CrashScene): string[] {
  return leaks({ root: scene.root, stateDir: scene.state }, scene.found);
}

/** Runs `mesh-host apply` and kills it (SIGKILL) after `delayMs`; resolves once it is gone. */
export async function applyKilledAfter(scene: CrashScene, delayMs: number): Promise<{ killed: boolean }> {
  const child = spawn(process.execPath, scene.args(scene.full), { stdio: 'ignore' });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const timer = setTimeout(() => child.kill('SIGKILL'), delayMs);
  const code = await exited;
  clearTimeout(timer);
  return { killed: code === null };
}

/** `mesh-host apply` of a declaration, to its end: its exit code and what it printed. */
export function applyNow(scene: CrashScene, declaration: string, prefix: string[] = [], env: NodeJS.ProcessEnv = {}): { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string } {
  const [command, ...args] = prefix.length > 0 ? [...prefix, process.execPath, ...scene.args(declaration)] : [process.execPath, ...scene.args(declaration)];
  const r = spawnSync(command!, args, { encoding: 'utf8', env: { ...process.env, UV_USE_IO_URING: '0', ...env }, maxBuffer: 1 << 28 });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** A SIGKILL strace injects at the `when`th call of `syscall` by one thread (of calls on paths under `path`, when given). */
export interface Injection {
  syscall: string;
  when: number;
  path?: string;
}

export interface KilledRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** strace's line of the call its thread was killed in, when its log shows one: the proof of where it died. */
  killedAt?: string;
}

/** Whether strace can run here: a test that needs it is skipped without it, except in CI, where it fails. */
export const straceMissing = spawnSync('strace', ['-V']).error !== undefined;

/**
 * Runs a command under strace with a SIGKILL injected at one call, and reads strace's log for where it
 * died: the call's line left unfinished (`= ?`) in a thread strace then saw killed by SIGKILL (with
 * `-y`, so a descriptor shows the path it is open on). A run the
 * injection never reached (or no strace at all) has no `killedAt`, and its signal is not SIGKILL.
 */
export function runKilledAt(command: string[], at: Injection, env: NodeJS.ProcessEnv = {}): KilledRun {
  const log = join(mkdtempSync(join(tmpdir(), 'mesh-host-strace-')), 'log');
  try {
    const filter = at.path ? ['-P', at.path] : [];
    const args = ['-f', '-qq', '-y', '-o', log, ...filter, '-e', `trace=${at.syscall}`, '-e', `inject=${at.syscall}:signal=SIGKILL:when=${at.when}`, ...command];
    const r = spawnSync('strace', args, { encoding: 'utf8', env: { ...process.env, UV_USE_IO_URING: '0', ...env }, maxBuffer: 1 << 28 });
    if (r.error) return { code: null, signal: null, stdout: '', stderr: `strace could not run: ${r.error.message}` };
    const killedAt = existsSync(log) ? killedIn(readFileSync(log, 'utf8'), at.syscall) : undefined;
    return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, ...(killedAt ? { killedAt } : {}) };
  } finally {
    rmSync(dirname(log), { recursive: true, force: true });
  }
}

/** From strace's log (`-f -o`): the call of `syscall` a thread was in when SIGKILL ended it (with its arguments, if strace split the line). */
export function killedIn(log: string, syscall: string): string | undefined {
  // With -f each line starts with its thread's id; without it (one thread traced) with nothing.
  const lines = log.split('\n');
  const killed = new Set(lines.flatMap((l) => /^(?:(\d+)\s+)?\+\+\+ killed by SIGKILL/.exec(l)?.[1] ?? (/^\+\+\+ killed by SIGKILL/.test(l) ? '' : [])));
  for (const [i, line] of lines.entries()) {
    const m = new RegExp(`^(?:(\\d+)\\s+)?(?:${syscall}\\(.*|<\\.\\.\\. ${syscall} resumed>.*)\\s+= \\?$`).exec(line);
    if (!m || !killed.has(m[1] ?? '')) continue;
    if (!line.includes('resumed>')) return line;
    const started = lines.slice(0, i).reverse().find((l) => l.startsWith(`${m[1]} `) && l.includes(`${syscall}(`) && l.endsWith('<unfinished ...>'));
    return `${started ?? ''} ${line}`.trim();
  }
  return undefined;
}
