import { formatInventory, takeInventory } from '../../inventory/inventory.js';
import { output, type CommandContext } from '../context.js';
import { EXIT } from '../../system/errors.js';

export async function inventoryCommand(ctx: CommandContext): Promise<number> {
  const inventory = await takeInventory({ runner: ctx.runner });
  output(ctx, inventory, () => formatInventory(inventory));
  return EXIT.ok;
}
