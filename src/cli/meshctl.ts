import { runProgram, type CommandTable } from './main.js';
import { meshctlProgram } from './programs.js';

const commands: CommandTable = {
  keygen: async () => (await import('./commands/keys.js')).keygenCommand,
  sign: async () => (await import('./commands/keys.js')).signCommand,
  bundle: async () => (await import('./commands/bundle.js')).bundleCommand,
  send: async () => (await import('./commands/mesh.js')).sendCommand,
  'put-archive': async () => (await import('./commands/put-archive.js')).putArchiveCommand,
  reports: async () => (await import('./commands/mesh.js')).reportsCommand,
  status: async () => (await import('./commands/mesh.js')).statusCommand,
  'node-key': async () => (await import('./commands/node-key.js')).nodeKeyCommand,
  'node-creds': async () => (await import('./commands/node-creds.js')).nodeCredsCommand,
};

export function main(argv: readonly string[]): Promise<number> {
  return runProgram(meshctlProgram, commands, argv);
}
