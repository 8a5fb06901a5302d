import type { HostConfig } from '../config/config.js';
import { firewallFindings, formatFirewallFindings } from '../firewall/inventory.js';
import type { FilterEntry, FoundFirewall } from '../firewall/types.js';
import { formatInventory, presentServiceManager, takeInventory, type Inventory } from '../inventory/inventory.js';
import { chooseServiceManager } from '../services/choose.js';
import { declaredServiceStates, formatServiceStates, type DeclaredServiceState } from '../services/declared.js';
import type { ServiceManager } from '../services/manager.js';
import type { StoreState } from '../store/state.js';
import type { CommandRunner } from '../system/runner.js';

/** Everything an inventory says of a host: capabilities, links, filters, the found firewall, the declared services' states. */
export interface HostInventory extends Inventory {
  filters: FilterEntry[];
  filtersNotInstalled: string[];
  foundFirewall: FoundFirewall | null;
  services: DeclaredServiceState[] | { reason: string };
}

export interface HostInventoryInput {
  runner: CommandRunner;
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
  const [inventory, manager] = await Promise.all([taken, managed]);
  const [services, firewall] = await Promise.all([declaredServiceStates(state, manager), firewallRead]);
  return { ...inventory, filters: firewall.filters.filters, filtersNotInstalled: firewall.filters.notInstalled, foundFirewall: firewall.foundFirewall, services };
}

export function formatHostInventory(inventory: HostInventory): string {
  const { filters, filtersNotInstalled, foundFirewall, services } = inventory;
  const noServices = Array.isArray(services) && services.length === 0;
  return [
    formatInventory(inventory),
    ...formatFirewallFindings({ filters: { filters, notInstalled: filtersNotInstalled }, foundFirewall }),
    ...(noServices ? [] : ['declared services:', ...formatServiceStates(services)]),
  ].join('\n');
}
