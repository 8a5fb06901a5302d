import type { CommandRunner } from '../system/runner.js';
import { ServiceManagerError, type ServiceManager, type UnitState } from './manager.js';

/**
 * OpenRC through rc-service, rc-update and rc-status. It has no invocation id or restart count, so
 * the second look compares the main process instead (a new PID between the looks is a restart).
 */
export function openrcManager(runner: CommandRunner, options: { timeoutMs?: number } = {}): ServiceManager {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const run = (command: string, args: string[]) => runner.run(command, args, { timeoutMs });
  return {
    name: 'openrc',
    unitDirectories: ['/etc/init.d'],
    async query(units) {
      const states = new Map<string, UnitState>();
      if (units.length === 0) return states;
      // One call for every state and one for every runlevel's services: batched like systemd's.
      const [status, enabled] = await Promise.all([run('rc-status', ['--all', '--nocolor']), run('rc-update', ['show', 'default'])]);
      if (status.failure || status.code !== 0) throw new ServiceManagerError(`rc-status failed: ${status.failure?.message ?? status.stderr.trim()}`);
      const seen = new Map<string, string>();
      for (const line of status.stdout.split('\n')) {
        const m = /^\s*(\S+)\s+\[\s*(\w+)/.exec(line);
        if (m) seen.set(m[1]!, m[2]!);
      }
      const inDefault = new Set(enabled.stdout.split('\n').map((l) => l.split('|')[0]!.trim()).filter(Boolean));
      for (const unit of units) {
        const state = seen.get(unit);
        const activeState = state === 'started' ? 'active' : state === 'starting' ? 'activating' : state === 'crashed' ? 'failed' : 'inactive';
        states.set(unit, {
          unit,
          loadState: state === undefined ? 'not-found' : 'loaded',
          activeState,
          subState: state ?? 'unknown',
          result: state === 'crashed' ? 'crashed' : 'success',
          unitFileState: inDefault.has(unit) ? 'enabled' : 'disabled',
          invocationId: '',
          nRestarts: 0,
          mainPid: 0,
          job: '',
        });
      }
      return states;
    },
    async act(unit, action) {
      const result = await run('rc-service', [unit, action]);
      if (result.failure || result.code !== 0) throw new ServiceManagerError(`rc-service ${unit} ${action} failed: ${result.failure?.message ?? result.stderr.trim()}`);
    },
    async setEnabled(unit, enabled) {
      const result = await run('rc-update', [enabled ? 'add' : 'del', unit, 'default']);
      if (result.failure || result.code !== 0) throw new ServiceManagerError(`rc-update failed for ${unit}: ${result.failure?.message ?? result.stderr.trim()}`);
    },
    async daemonReload() {
      // OpenRC reads its scripts at each action: nothing to reload.
    },
  };
}
