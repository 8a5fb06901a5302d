import { runProgram, type CommandTable } from './main.js';
import { meshHostProgram } from './programs.js';

const commands: CommandTable = {
  inventory: async () => (await import('./commands/inventory.js')).inventoryCommand,
  apply: async () => (await import('./commands/apply.js')).applyCommand,
  status: async () => (await import('./commands/status.js')).statusCommand,
  genesis: async () => (await import('./commands/genesis.js')).genesisCommand,
  reconcile: async () => (await import('./commands/reconcile.js')).reconcileCommand,
  pause: async () => (await import('./commands/pause.js')).pauseCommand,
  resume: async () => (await import('./commands/pause.js')).resumeCommand,
  chart: async () => (await import('./commands/chart.js')).chartCommand,
  run: async () => (await import('./commands/run.js')).runCommand,
  launch: async () => (await import('./commands/launch.js')).launchCommand,
  install: async () => (await import('./commands/install.js')).installCommand,
  uninstall: async () => (await import('./commands/install.js')).uninstallCommand,
};

export function main(argv: readonly string[]): Promise<number> {
  return runProgram(meshHostProgram, commands, argv);
}
