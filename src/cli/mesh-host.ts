import { runProgram, type CommandTable } from './main.js';
import { meshHostProgram } from './programs.js';

const commands: CommandTable = {
  inventory: async () => (await import('./commands/inventory.js')).inventoryCommand,
};

export function main(argv: readonly string[]): Promise<number> {
  return runProgram(meshHostProgram, commands, argv);
}
