import { runProgram, type CommandTable } from '../cli/run-program.js';
import { meshHostProgram } from '../cli/programs.js';

const commands: CommandTable = {
  inventory: async () => (await import('../host/commands/inventory-command.js')).inventoryCommand,
  apply: async () => (await import('../host/commands/apply-command.js')).applyCommand,
  status: async () => (await import('../host/commands/status-command.js')).statusCommand,
  genesis: async () => (await import('../host/commands/genesis-command.js')).genesisCommand,
  reconcile: async () => (await import('../host/commands/reconcile-command.js')).reconcileCommand,
  rekey: async () => (await import('../host/commands/rekey-command.js')).rekeyCommand,
  pause: async () => (await import('../host/commands/pause-command.js')).pauseCommand,
  resume: async () => (await import('../host/commands/pause-command.js')).resumeCommand,
  chart: async () => (await import('../host/commands/chart-command.js')).chartCommand,
  run: async () => (await import('../host/commands/run-command.js')).runCommand,
  launch: async () => (await import('../host/commands/launch-command.js')).launchCommand,
  install: async () => (await import('../host/commands/install-command.js')).installCommand,
  uninstall: async () => (await import('../host/commands/install-command.js')).uninstallCommand,
  completion: async () => (await import('../cli/completion.js')).completionCommand(meshHostProgram),
};

export function main(argv: readonly string[]): Promise<number> {
  return runProgram(meshHostProgram, commands, argv);
}
