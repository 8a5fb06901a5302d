import { formatInventory, presentServiceManager, takeInventory } from '../../inventory/inventory.js';
import { declaredServiceStates, formatServiceStates } from '../../services/declared.js';
import { chooseServiceManager } from '../../services/choose.js';
import { peekState } from '../../store/store.js';
import { loadConfig } from '../../config/config.js';
import { output, type CommandContext } from '../context.js';
import { EXIT } from '../../system/errors.js';
import { hostPaths } from '../host.js';
import { firewallFindings, formatFirewallFindings } from '../../firewall/inventory.js';

/** `mesh-host inventory`: capabilities, links, filters and the found firewall, and the states of the declared services. Reads only. */
export async function inventoryCommand(ctx: CommandContext): Promise<number> {
  const paths = hostPaths(ctx);
  const { config } = loadConfig(paths.configPath);
  const state = peekState(paths.stateDir);
  const taken = takeInventory({ runner: ctx.runner });
  const managerOf = async () => {
    const forced = config.serviceManager ?? presentServiceManager(await taken);
    return forced ? (await chooseServiceManager(ctx.runner, forced)).manager : undefined;
  };
  const managed = managerOf();
  // The filters are read while the capabilities are probed: the inventory takes as long as the slowest.
  const firewallRead = firewallFindings(ctx.runner, managed, state, config.meshTablePrefix);
  const [inventory, manager] = await Promise.all([taken, managed]);
  const [services, firewall] = await Promise.all([declaredServiceStates(state, manager), firewallRead]);
  const shown = Array.isArray(services) && services.length === 0;
  output(ctx, { ...inventory, filters: firewall.filters.filters, filtersNotInstalled: firewall.filters.notInstalled, foundFirewall: firewall.foundFirewall, services }, () =>
    [formatInventory(inventory), ...formatFirewallFindings(firewall), ...(shown ? [] : ['declared services:', ...formatServiceStates(services)])].join('\n'),
  );
  return EXIT.ok;
}
