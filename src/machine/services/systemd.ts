import type { CommandRunner, RunResult } from '../../core/system/runner.js';
import { ServiceManagerError, type ServiceManager, type UnitAction, type UnitState } from './manager.js';

const PROPERTIES = ['Id', 'LoadState', 'ActiveState', 'SubState', 'Result', 'UnitFileState', 'InvocationID', 'NRestarts', 'MainPID', 'Job'] as const;

export const SYSTEMD_UNIT_DIRECTORIES = ['/etc/systemd/system', '/run/systemd/system', '/lib/systemd/system', '/usr/lib/systemd/system', '/usr/local/lib/systemd/system'];

/** Parses `systemctl show -p …` for several units: one block of Key=Value lines a unit, blank lines between, in argument order. */
export function parseShow(output: string, units: readonly string[]): Map<string, UnitState> {
  const blocks = output.split(/\n\s*\n/).map((b) => b.trim()).filter(Boolean);
  if (blocks.length !== units.length) {
    throw new ServiceManagerError(`systemctl show answered ${blocks.length} units for ${units.length} asked (${units.join(' ')})`);
  }
  const states = new Map<string, UnitState>();
  blocks.forEach((block, i) => {
    const p = new Map<string, string>();
    for (const line of block.split('\n')) {
      const eq = line.indexOf('=');
      if (eq > 0) p.set(line.slice(0, eq), line.slice(eq + 1));
    }
    const unit = units[i]!;
    states.set(unit, {
      unit,
      loadState: p.get('LoadState') ?? '',
      activeState: p.get('ActiveState') ?? '',
      subState: p.get('SubState') ?? '',
      result: p.get('Result') ?? '',
      unitFileState: p.get('UnitFileState') ?? '',
      invocationId: p.get('InvocationID') ?? '',
      nRestarts: Number(p.get('NRestarts') ?? 0) || 0,
      mainPid: Number(p.get('MainPID') ?? 0) || 0,
      job: p.get('Job') ?? '',
    });
  });
  return states;
}

function failure(what: string, result: RunResult): ServiceManagerError {
  const said = (result.failure?.message ?? result.stderr.trim()) || `exit ${result.code}`;
  return new ServiceManagerError(`${what} failed: ${said}`);
}

/** systemd through systemctl. Actions use --no-block: the host never waits for a unit to come up. */
export function systemdManager(runner: CommandRunner, options: { timeoutMs?: number } = {}): ServiceManager {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const systemctl = async (args: string[], what: string) => {
    const result = await runner.run('systemctl', args, { timeoutMs });
    if (result.failure || result.code !== 0) throw failure(what, result);
    return result;
  };
  return {
    name: 'systemd',
    unitDirectories: SYSTEMD_UNIT_DIRECTORIES,
    async query(units) {
      if (units.length === 0) return new Map();
      const result = await systemctl(['show', '-p', PROPERTIES.join(','), '--', ...units], `systemctl show ${units.join(' ')}`);
      return parseShow(result.stdout, units);
    },
    async act(unit: string, action: UnitAction) {
      await systemctl([action, '--no-block', '--', unit], `systemctl ${action} ${unit}`);
    },
    async setEnabled(unit, enabled) {
      await systemctl([enabled ? 'enable' : 'disable', '--', unit], `systemctl ${enabled ? 'enable' : 'disable'} ${unit}`);
    },
    async daemonReload() {
      await systemctl(['daemon-reload'], 'systemctl daemon-reload');
    },
  };
}
