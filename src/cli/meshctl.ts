import { runProgram, type CommandTable } from './main.js';
import { meshctlProgram } from './programs.js';

const commands: CommandTable = {};

export function main(argv: readonly string[]): Promise<number> {
  return runProgram(meshctlProgram, commands, argv);
}
