import type { HostConfig } from '../../core/config/config.js';
import { firewallFindings, formatFirewallFindings } from '../../machine/filters/filter-inventory.js';
import type { FilterEntry, FoundFirewall } from '../../machine/filters/filter-types.js';
import { formatInventory, presentServiceManager, takeInventory, type Inventory } from '../../machine/inventory/inventory.js';
import { chooseServiceManager } from '../../machine/services/choose.js';
import { declaredServiceStates, formatServiceStates, type DeclaredServiceState } from '../../kinds/service/declared.js';
import { foundManager } from '../../kinds/package/package-managers.js';
import type { ServiceManager } from '../../machine/services/manager.js';
import type { StoreState } from '../../core/store/state.js';
import type { CommandRunner } from '../../core/system/runner.js';

/** Everything an inventory says of a host: capabilities, links, filters, the found firewall, the declared services' states. */
export interface HostInventory extends Inventory {
  filters: FilterEntry[];
  filtersNotInstalled: string[];
  foundFirewall: FoundFirewall | null;
  services: DeclaredServiceState[] | { reason: string };
  /** The package manager the package kind acts through here, with what is installed of it; or why there is none. */
  packageManager: { name: string; detail: string } | { reason: string };
}

/** The manager the package kind would find under the host's root, as the inventory names it. */
async function packageManagerFound(runner: CommandRunner, root: string): Promise<HostInventory['packageManager']> {
  const manager = await foundManager(runner)(root);
  return typeof manager === 'string' ? { reason: manager } : { name: manager.name, detail: await manager.describe() };
}

export interface HostInventoryInput {
  runner: CommandRunner;
  /** The root the host's declared paths are under (`/`, or --root): the package manager is the one found there. */
  root: string;
  config: Pick<HostConfig, 'serviceManager' | 'meshTablePrefix'>;
  /** The store as saved (read only): what it keeps of the found firewall and which services are declared. */
  state: StoreState | undefined;
  /** The daemon's own choice of service manager; without it, the one the configuration forces or the probes find. */
  serviceManager?: () => Promise<ServiceManager | undefined>;
}

/**
 * The one inventory, for `mesh-host inventory` and for the mesh's inventory request to a daemon: reads
 * only. The filters and the found firewall are read while the capabilities are probed, so the whole
 * takes as long as the slowest probe.
 */
export async function hostInventory(input: HostInventoryInput): Promise<HostInventory> {
  const { runner, config, state } = input;
  const taken = takeInventory({ runner });
  const managerOf = async () => {
    if (input.serviceManager) return input.serviceManager();
    const forced = config.serviceManager ?? presentServiceManager(await taken);
    return forced ? (await chooseServiceManager(runner, forced)).manager : undefined;
  };
  const managed = managerOf();
  const firewallRead = firewallFindings(runner, managed, state, config.meshTablePrefix);
  const packagesRead = packageManagerFound(runner, input.root);
  const [inventory, manager] = await Promise.all([taken, managed]);
  const [services, firewall, packageManager] = await Promise.all([declaredServiceStates(state, manager), firewallRead, packagesRead]);
  return { ...inventory, filters: firewall.filters.filters, filtersNotInstalled: firewall.filters.notInstalled, foundFirewall: firewall.foundFirewall, services, packageManager };
}

export function formatHostInventory(inventory: HostInventory): string {
  const { filters, filtersNotInstalled, foundFirewall, services, packageManager } = inventory;
  const noServices = Array.isArray(services) && services.length === 0;
  return [
    formatInventory(inventory),
    'package manager (packages are installed and removed through it):',
    'name' in packageManager ? `  + ${packageManager.name.padEnd(16)} ${packageManager.detail}` : `  (none: ${packageManager.reason})`,
    ...formatFirewallFindings({ filters: { filters, notInstalled: filtersNotInstalled }, foundFirewall }),
    ...(noServices ? [] : ['declared services:', ...formatServiceStates(services)]),
  ].join('\n');
}
