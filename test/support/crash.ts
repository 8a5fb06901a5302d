import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectDir } from './cli.js';

/**
 * A scratch root and state directory, a declaration of `files` files (in `dirs` directories under
 * /srv/app) and one that drops them all: for killing `mesh-host apply` mid-way and proving that the
 * next apply leaves nothing behind.
 */
export interface CrashScene {
  root: string;
  state: string;
  full: string;
  empty: string;
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
    args: (declaration) => [join(projectDir, 'bin/mesh-host'), 'apply', declaration, '--root', root, '--state-dir', state, '--config', join(dir, 'host.json'), '--log-level', 'warn', '--json'],
  };
}

/** Everything on the scratch root below /srv, and every temporary save in the state directory. */
export function leftBehind(scene: CrashScene): string[] {
  const found: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      found.push(`${rel}/${entry.name}`);
      if (entry.isDirectory()) walk(join(dir, entry.name), `${rel}/${entry.name}`);
    }
  };
  walk(join(scene.root, 'srv'), '/srv');
  try {
    for (const name of readdirSync(scene.state)) if (name.includes('.tmp-')) found.push(`state/${name}`);
  } catch {
    // no state yet
  }
  return found;
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
