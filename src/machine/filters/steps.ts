import type { ServiceManager } from '../services/manager.js';
import type { CommandRunner } from '../../core/system/runner.js';
import { firewalldUnit } from './found.js';
import type { FirewallTool } from './filter-types.js';

/** One step of a retirement: the tool itself turning its firewall off, or keeping it off at boot. */
export interface RetirementStep {
  /** The command as an operator would type it. */
  name: string;
  run(): Promise<void>;
}

const STOP_BOUND_MS = 30_000;

/**
 * The steps that retire a found firewall, through the tool itself: `ufw disable` (off now and at
 * boot); firewalld disabled at boot, then stopped (`systemctl disable --now`, or OpenRC's
 * rc-update del and rc-service stop). Nobody's tables are flushed by hand.
 */
export function retirementSteps(tool: FirewallTool, runner: CommandRunner, manager: ServiceManager | undefined): RetirementStep[] | { cannot: string } {
  if (tool === 'ufw') {
    return [
      {
        name: 'ufw disable',
        async run() {
          const result = await runner.run('ufw', ['disable'], { timeoutMs: 60_000 });
          if (result.failure) throw new Error(result.failure.message);
          if (result.code !== 0) throw new Error(`ufw disable failed: ${(result.stderr.trim() || result.stdout.trim()).split('\n')[0] ?? ''} (exit ${result.code})`);
        },
      },
    ];
  }
  if (!manager) return { cannot: 'no service manager functions here to disable and stop firewalld' };
  const unit = firewalldUnit(manager);
  const systemd = manager.name === 'systemd';
  return [
    { name: systemd ? `systemctl disable ${unit}` : `rc-update del ${unit} default`, run: () => manager.setEnabled(unit, false) },
    {
      name: systemd ? `systemctl stop ${unit}` : `rc-service ${unit} stop`,
      async run() {
        await manager.act(unit, 'stop');
        await stopped(manager, unit);
      },
    },
  ];
}

/** Waits, bounded, until the manager says the unit is down: its filter is gone only then. */
async function stopped(manager: ServiceManager, unit: string): Promise<void> {
  const deadline = Date.now() + STOP_BOUND_MS;
  for (;;) {
    const state = (await manager.query([unit])).get(unit);
    if (!state || state.activeState === 'inactive' || state.activeState === 'failed') return;
    if (Date.now() > deadline) throw new Error(`${unit} was asked to stop and is still ${state.activeState} after ${STOP_BOUND_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
