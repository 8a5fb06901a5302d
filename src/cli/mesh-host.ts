import { runProgram, type CommandTable } from './main.js';
import { meshHostProgram } from './programs.js';

const commands: CommandTable = {
  inventory: async () => (await import('./commands/inventory.js')).inventoryCommand,
  apply: async () => (await import('./commands/apply.js')).applyCommand,
  status: async () => (await import('./commands/status.js')).statusCommand,
};

export function main(argv: readonly string[]): Promise<number> {
  return runProgram(meshHostProgram, commands, argv);
}
