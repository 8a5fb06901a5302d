import { runProgram, type CommandTable } from './main.js';
import { meshctlProgram } from './programs.js';

const commands: CommandTable = {
  keygen: async () => (await import('./commands/keys.js')).keygenCommand,
  sign: async () => (await import('./commands/keys.js')).signCommand,
  bundle: async () => (await import('./commands/bundle.js')).bundleCommand,
};

export function main(argv: readonly string[]): Promise<number> {
  return runProgram(meshctlProgram, commands, argv);
}
