import { peekState } from '../../core/store/store.js';
import { loadConfig } from '../../core/config/config.js';
import { output, type CommandContext } from '../../cli/context.js';
import { EXIT } from '../../core/system/errors.js';
import { hostPaths } from './with-host.js';
import { formatHostInventory, hostInventory } from '../env/host-inventory.js';

/** `mesh-host inventory`: capabilities, links, filters and the found firewall, and the states of the declared services. Reads only. */
export async function inventoryCommand(ctx: CommandContext): Promise<number> {
  const paths = hostPaths(ctx);
  const { config } = loadConfig(paths.configPath);
  const inventory = await hostInventory({ runner: ctx.runner, root: paths.root, config, state: peekState(paths.stateDir) });
  output(ctx, inventory, () => formatHostInventory(inventory));
  return EXIT.ok;
}
