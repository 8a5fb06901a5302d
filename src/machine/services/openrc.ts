import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandRunner } from '../../core/system/runner.js';
import { ServiceManagerError, type ServiceManager, type UnitState } from './manager.js';

/**
 * OpenRC through rc-service, rc-update and rc-status. It has no invocation id or restart count, so
 * the second look compares the main process instead: its PID stands for the invocation (a new PID
 * between the looks is a restart).
 *
 * OpenRC says `started` for as long as nothing stopped the service: with Debian's start-stop-daemon it
 * keeps no record of the daemon, and a daemon that died is still `started`. So the host looks at the
 * process itself, found by the pidfile OpenRC recorded for it or, failing that, `/run/NAME.pid` (the
 * openrc-run convention): a started service whose process is gone is read as failed.
 */
export function openrcManager(runner: CommandRunner, options: { timeoutMs?: number; root?: string } = {}): ServiceManager {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const root = options.root ?? '/';
  const run = (command: string, args: string[]) => runner.run(command, args, { timeoutMs });
  return {
    name: 'openrc',
    unitDirectories: ['/etc/init.d'],
    async query(units) {
      const states = new Map<string, UnitState>();
      if (units.length === 0) return states;
      // One call for the services there are, one for the states, one for the default runlevel: batched
      // like systemd's. rc-status lists only services in a runlevel or running; a script that is merely
      // installed is stopped, and only one rc-service does not list does not exist.
      const [known, status, enabled] = await Promise.all([run('rc-service', ['--list']), run('rc-status', ['--all', '--nocolor']), run('rc-update', ['show', 'default'])]);
      if (known.failure || known.code !== 0) throw new ServiceManagerError(`rc-service --list failed: ${known.failure?.message ?? known.stderr.trim()}`);
      if (status.failure || status.code !== 0) throw new ServiceManagerError(`rc-status failed: ${status.failure?.message ?? status.stderr.trim()}`);
      const installed = new Set(known.stdout.split('\n').map((l) => l.trim()).filter(Boolean));
      const seen = new Map<string, string>();
      for (const line of status.stdout.split('\n')) {
        const m = /^\s*(\S+)\s+\[\s*(\w+)/.exec(line);
        if (m) seen.set(m[1]!, m[2]!);
      }
      const inDefault = new Set(enabled.stdout.split('\n').map((l) => l.split('|')[0]!.trim()).filter(Boolean));
      for (const unit of units) {
        let state = seen.get(unit) ?? (installed.has(unit) ? 'stopped' : undefined);
        const daemon = state === 'started' ? daemonOf(root, unit) : undefined;
        if (daemon && !daemon.alive) state = 'crashed';
        const activeState = state === 'started' ? 'active' : state === 'starting' ? 'activating' : state === 'crashed' ? 'failed' : 'inactive';
        states.set(unit, {
          unit,
          loadState: state === undefined ? 'not-found' : 'loaded',
          activeState,
          subState: daemon && !daemon.alive ? `crashed (its process ${daemon.pid} from ${daemon.pidfile} is gone)` : (state ?? 'unknown'),
          result: state === 'crashed' ? 'crashed' : 'success',
          unitFileState: inDefault.has(unit) ? 'enabled' : 'disabled',
          // A supervised daemon's process and respawns, so a daemon its supervisor keeps starting again is seen.
          invocationId: daemon ? `pid ${daemon.supervised?.childPid ?? daemon.pid}` : '',
          nRestarts: daemon?.supervised?.respawns ?? 0,
          mainPid: daemon?.alive ? (daemon.supervised?.childPid ?? daemon.pid) : 0,
          job: '',
        });
      }
      return states;
    },
    async act(unit, action) {
      // A daemon that died stays `started` to OpenRC, and `start` then only says it already is: the
      // service is reset to stopped first (`zap`), as an operator would, so that it really starts.
      if (action === 'start' && daemonOf(root, unit)?.alive === false) {
        const zapped = await run('rc-service', [unit, 'zap']);
        if (zapped.failure || zapped.code !== 0) throw new ServiceManagerError(`rc-service ${unit} zap failed: ${zapped.failure?.message ?? zapped.stderr.trim()}`);
      }
      const result = await run('rc-service', [unit, action]);
      if (result.failure || result.code !== 0) throw new ServiceManagerError(`rc-service ${unit} ${action} failed: ${result.failure?.message ?? result.stderr.trim()}`);
    },
    async setEnabled(unit, enabled) {
      const result = await run('rc-update', [enabled ? 'add' : 'del', unit, 'default']);
      if (result.failure || result.code !== 0) throw new ServiceManagerError(`rc-update failed for ${unit}: ${result.failure?.message ?? result.stderr.trim()}`);
    },
    async daemonReload() {
      // OpenRC reads a script at each action, but rc-status lists services from its dependency tree,
      // which it refreshes only when /etc/init.d looks newer (to the second): a script written in the
      // same second as the tree would be missing from the looks. Forced, as systemd's daemon-reload.
      const result = await run('rc-update', ['--update']);
      if (result.failure || result.code !== 0) throw new ServiceManagerError(`rc-update --update failed: ${result.failure?.message ?? result.stderr.trim()}`);
    },
  };
}

/** The daemon of a started service, as its pidfile names it. */
export interface OpenrcDaemon {
  /** The process the pidfile names: the daemon itself, or its supervise-daemon. */
  pid: number;
  pidfile: string;
  alive: boolean;
  /**
   * For a service run by supervise-daemon (`supervisor=supervise-daemon`): the pidfile names the
   * supervisor, which starts the daemon again whenever it ends. The daemon is the supervisor's child,
   * and how often it was started again is counted, both in OpenRC's options of the service.
   */
  supervised?: { childPid: number; childAlive: boolean; respawns: number };
}

/** The daemon of a started service, by its pidfile, and whether its process is still there. */
export function daemonOf(root: string, unit: string): OpenrcDaemon | undefined {
  for (const pidfile of [...recordedPidfiles(root, unit), `/run/${unit}.pid`]) {
    let pid: number;
    try {
      pid = Number.parseInt(readFileSync(join(root, pidfile), 'utf8').trim(), 10);
    } catch {
      continue;
    }
    if (!Number.isInteger(pid) || pid <= 0) continue;
    const supervised = supervisedChild(root, unit, pid);
    return { pid, pidfile, alive: processAlive(root, pid), ...(supervised ? { supervised } : {}) };
  }
  return undefined;
}

/** What supervise-daemon keeps of its child (`/run/openrc/options/NAME/child_pid`, `start_count`), when the pidfile names a supervisor. */
function supervisedChild(root: string, unit: string, supervisor: number): OpenrcDaemon['supervised'] {
  const option = (name: string) => {
    try {
      return Number.parseInt(readFileSync(join(root, 'run/openrc/options', unit, name), 'utf8').trim(), 10);
    } catch {
      return Number.NaN;
    }
  };
  const childPid = option('child_pid');
  if (!Number.isInteger(childPid) || childPid <= 0) return undefined;
  // Options outlive the service they were written for: they are this supervisor's only if the living
  // process the pidfile names is a supervise-daemon (a dead one is read as a supervisor gone).
  if (processAlive(root, supervisor) && !commandOf(root, supervisor).startsWith('supervise-daemon')) return undefined;
  const respawns = option('start_count');
  return { childPid, childAlive: processAlive(root, childPid), respawns: Number.isInteger(respawns) ? respawns : 0 };
}

function commandOf(root: string, pid: number): string {
  try {
    return readFileSync(join(root, 'proc', String(pid), 'cmdline'), 'utf8').split('\0')[0]!.split('/').pop()!;
  } catch {
    return '';
  }
}

/** What OpenRC's own start-stop-daemon recorded (`pidfile=` in /run/openrc/daemons/NAME/NNN). */
function recordedPidfiles(root: string, unit: string): string[] {
  const dir = join(root, 'run/openrc/daemons', unit);
  try {
    return readdirSync(dir).flatMap((entry) => {
      const m = /^pidfile=(\/\S+)$/m.exec(readFileSync(join(dir, entry), 'utf8'));
      return m ? [m[1]!] : [];
    });
  } catch {
    return [];
  }
}

function processAlive(root: string, pid: number): boolean {
  try {
    const stat = readFileSync(join(root, 'proc', String(pid), 'stat'), 'utf8');
    // A zombie has ended; only its parent has not yet been told.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
