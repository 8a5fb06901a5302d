import { runProbe } from '../inventory/inventory.js';
import { openrcProbe, systemdProbe } from '../inventory/inventory-probes.js';
import type { CommandRunner } from '../../core/system/runner.js';
import type { ServiceManager } from './manager.js';
import { openrcManager } from './openrc.js';
import { systemdManager } from './systemd.js';

export type ManagerChoice = { manager: ServiceManager; reason: string } | { manager: undefined; reason: string };

/** The service manager: forced by the configuration, or the one the inventory finds functioning. */
export async function chooseServiceManager(runner: CommandRunner, forced?: 'systemd' | 'openrc'): Promise<ManagerChoice> {
  if (forced === 'systemd') return { manager: systemdManager(runner), reason: 'systemd, forced by the configuration' };
  if (forced === 'openrc') return { manager: openrcManager(runner), reason: 'OpenRC, forced by the configuration' };
  const [systemd, openrc] = await Promise.all([runProbe(runner, systemdProbe, 3000), runProbe(runner, openrcProbe, 3000)]);
  if (systemd.present) return { manager: systemdManager(runner), reason: systemd.reason };
  if (openrc.present) return { manager: openrcManager(runner), reason: openrc.reason };
  return { manager: undefined, reason: `no service manager functions here: systemd: ${systemd.reason}; OpenRC: ${openrc.reason}` };
}
