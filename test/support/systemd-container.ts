import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type { CommandRunner, RunResult } from '../../src/core/system/runner.js';
import { systemRunner } from '../../src/core/system/runner.js';

/**
 * A real systemd, booted in a container over this machine's own root :
 * `systemd-nspawn --volatile=yes -D /` gives it a throwaway root, so nothing it does reaches the host.
 */
export interface SystemdContainer {
  name: string;
  /** PID (in our namespace) of the container's systemd. */
  initPid: number;
  /** Runs a command inside the container, in all of its namespaces. */
  runner: CommandRunner;
  exec(command: string, args?: string[], timeoutMs?: number): Promise<RunResult>;
  stop(): Promise<void>;
}

export interface ContainerOptions {
  /** Host folders made visible inside at the same path (the project, a scratch folder). */
  binds?: string[];
  /** The same, read-only. */
  readOnlyBinds?: string[];
  /**
   * Folders of the tree made writable inside under a throwaway overlay (`/usr`: under --volatile=yes it
   * is read-only, and a package installs into it); what is written there is gone with the container.
   */
  writable?: string[];
  bootTimeoutMs?: number;
  /** A network namespace of its own (nothing but lo): what runs inside cannot reach this machine's ruleset. */
  privateNetwork?: boolean;
  /** More words for the container's systemd command line (systemd.mask=…). */
  initArgs?: string[];
}

/**
 * A container over this machine's root starts with an empty /etc, and systemd enables every unit by
 * its presets at that first boot: the firewalls installed here (ufw, firewalld, fail2ban) would start
 * in every test's container, in this machine's own network namespace unless it has a private one.
 * This preset keeps them disabled; a test that wants one starts it itself.
 */
const NO_FIREWALLS_PRESET = [new URL('./no-firewalls.preset', import.meta.url), new URL('../../../test/support/no-firewalls.preset', import.meta.url)]
  .map((url) => url.pathname)
  // Beside this file in the sources; from dist/test/support (the benchmarks), back in the sources.
  .find((path) => existsSync(path))!;

let counter = 0;
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** Why a container cannot run here, or undefined when it can. */
export function containerUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'systemd-nspawn needs root';
  const probe = spawnSync('systemd-nspawn', ['--version'], { encoding: 'utf8' });
  if (probe.error) return 'systemd-nspawn is not installed (apt-get install systemd-container)';
  return undefined;
}

/** The first child of a process (nspawn's init, nsenter's command), if it has one yet. */
export function childOf(pid: number): number | undefined {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    return children.length ? Number(children[0]) : undefined;
  } catch {
    return undefined;
  }
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
  });
}

export async function startSystemdContainer(options: ContainerOptions = {}): Promise<SystemdContainer> {
  return startContainer({
    ...options,
    boot: true,
    // `starting` until boot ends; `running` or `degraded` once it has. Asked with room to answer: on a
    // loaded machine the manager itself can be slow to reply while it boots.
    ready: async (exec) => ['running', 'degraded'].includes((await exec('systemctl', ['is-system-running'], 15_000)).stdout.trim()),
    // A boot that never ends is waiting on some job: the failure names them.
    whyNotReady: async (exec) => {
      const state = await exec('systemctl', ['is-system-running'], 15_000);
      const jobs = await exec('systemctl', ['list-jobs', '--no-pager'], 15_000);
      return `is-system-running: ${state.stdout.trim() || state.failure?.message || state.code}\n${jobs.stdout.trim()}`;
    },
  });
}

export interface TreeContainerOptions extends ContainerOptions {
  /** The tree to run (default: this machine's own root). */
  tree?: string;
  /** Boot the tree's init, or run `command` under nspawn's stub init (--as-pid2). */
  boot: boolean;
  command?: string[];
  /** Asked inside until it says yes. */
  ready: (exec: SystemdContainer['exec']) => Promise<boolean>;
  /** What the container says of itself when it was not ready in time, for the failure. */
  whyNotReady?: (exec: SystemdContainer['exec']) => Promise<string>;
}

/**
 * A container over a tree that nothing it does can change: this machine's root as a tmpfs with /usr
 * read-only (--volatile=yes), or another tree under a tmpfs overlay (--volatile=overlay).
 */
export async function startContainer(options: TreeContainerOptions): Promise<SystemdContainer> {
  const name = `mhtest-${process.pid}-${++counter}`;
  const bootTimeoutMs = options.bootTimeoutMs ?? 45_000;
  const args = [
    '-D', options.tree ?? '/', `--volatile=${options.tree ? 'overlay' : 'yes'}`, '-M', name, '--register=no', '--keep-unit', '--console=passive',
    ...(options.binds ?? []).map((dir) => `--bind=${dir}`),
    ...(options.readOnlyBinds ?? []).map((path) => `--bind-ro=${path}`),
    ...(options.writable ?? []).map((dir) => `--overlay=${dir}::${dir}`),
    ...(options.tree ? [] : [`--bind-ro=${NO_FIREWALLS_PRESET}:/etc/systemd/system-preset/00-mesh-host-tests.preset`]),
    ...(options.privateNetwork ? ['--private-network'] : []),
    ...(options.boot ? ['-b', 'systemd.firstboot=off', ...(options.initArgs ?? [])] : ['--as-pid2', ...(options.command ?? ['sleep', 'infinity'])]),
  ];
  const nspawn = spawn('systemd-nspawn', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(nspawn);
  let log = '';
  nspawn.stdout.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  nspawn.stderr.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));

  const outer = systemRunner();
  let initPid: number | undefined;
  const stop = async () => {
    if (nspawn.exitCode === null && nspawn.signalCode === null) {
      // SIGTERM asks nspawn to power the container off; SIGKILL if it does not within a bound.
      nspawn.kill('SIGTERM');
      const timer = setTimeout(() => nspawn.kill('SIGKILL'), 10_000);
      await exited(nspawn);
      clearTimeout(timer);
    }
    live.delete(nspawn);
  };
  const exec = (command: string, cmdArgs: string[] = [], timeoutMs = 30_000) => {
    if (initPid === undefined) throw new Error(`container ${name} is not booted`);
    return outer.run('nsenter', ['-t', String(initPid), '-a', command, ...cmdArgs], { timeoutMs });
  };

  const deadline = Date.now() + bootTimeoutMs;
  try {
    for (;;) {
      if (nspawn.exitCode !== null || nspawn.signalCode !== null) {
        throw new Error(`systemd-nspawn exited (${nspawn.exitCode ?? nspawn.signalCode}) before it was ready:\n${log}`);
      }
      if (Date.now() > deadline) {
        const why = initPid !== undefined && options.whyNotReady ? await options.whyNotReady(exec).catch((err: Error) => err.message) : '';
        throw new Error(`container ${name} was not ready within ${bootTimeoutMs} ms:\n${why}\n${log}`);
      }
      // Read again until ready: nspawn's first child can be a short-lived helper (setting up a private
      // network, say) before it is the container's init.
      initPid = nspawn.pid === undefined ? undefined : childOf(nspawn.pid);
      if (initPid !== undefined && (await options.ready(exec))) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const runner: CommandRunner = {
    run: (command, cmdArgs, runOptions) => outer.run('nsenter', ['-t', String(initPid), '-a', command, ...cmdArgs], runOptions),
  };
  return { name, initPid, runner, exec, stop };
}
