import { formatInventory, presentServiceManager, takeInventory } from '../../inventory/inventory.js';
import { declaredServiceStates, formatServiceStates } from '../../services/declared.js';
import { chooseServiceManager } from '../../services/choose.js';
import { peekState } from '../../store/store.js';
import { loadConfig } from '../../config/config.js';
import { output, type CommandContext } from '../context.js';
import { EXIT } from '../../system/errors.js';
import { hostPaths } from '../host.js';

/** `mesh-host inventory`: capabilities, links, and the states of the declared services. Reads only. */
export async function inventoryCommand(ctx: CommandContext): Promise<number> {
  const paths = hostPaths(ctx);
  const { config } = loadConfig(paths.configPath);
  const inventory = await takeInventory({ runner: ctx.runner });
  const state = peekState(paths.stateDir);
  const forced = config.serviceManager ?? presentServiceManager(inventory);
  const manager = forced ? (await chooseServiceManager(ctx.runner, forced)).manager : undefined;
  const services = await declaredServiceStates(state, manager);
  const shown = Array.isArray(services) && services.length === 0;
  output(ctx, { ...inventory, services }, () => [formatInventory(inventory), ...(shown ? [] : ['declared services:', ...formatServiceStates(services)])].join('\n'));
  return EXIT.ok;
}
