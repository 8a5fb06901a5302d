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
  const inventory = await takeInventory({ runner: ctx.runner });
  const state = peekState(paths.stateDir);
  const forced = config.serviceManager ?? presentServiceManager(inventory);
  const manager = forced ? (await chooseServiceManager(ctx.runner, forced)).manager : undefined;
  const [services, firewall] = await Promise.all([declaredServiceStates(state, manager), firewallFindings(ctx.runner, manager, state, config.meshTablePrefix)]);
  const shown = Array.isArray(services) && services.length === 0;
  output(ctx, { ...inventory, filters: firewall.filters.filters, filtersNotInstalled: firewall.filters.notInstalled, foundFirewall: firewall.foundFirewall, services }, () =>
    [formatInventory(inventory), ...formatFirewallFindings(firewall), ...(shown ? [] : ['declared services:', ...formatServiceStates(services)])].join('\n'),
  );
  return EXIT.ok;
}
