import { runProgram, type Command, type CommandTable } from '../cli/run-program.js';
import { meshctlProgram } from '../cli/programs.js';

const commands: CommandTable = {
  init: async () => (await import('../control/commands/init-command.js')).initCommand,
  keygen: async () => (await import('../control/commands/keys-command.js')).keygenCommand,
  sign: async () => (await import('../control/commands/keys-command.js')).signCommand,
  bundle: async () => (await import('../control/commands/bundle-command.js')).bundleCommand,
  send: async () => (await import('../control/commands/mesh-command.js')).sendCommand,
  plan: async () => (await import('../control/commands/plan-command.js')).planCommand,
  rollout: async () => (await import('../control/commands/rollout-command.js')).rolloutCommand,
  reseal: async () => (await import('../control/commands/reseal-command.js')).resealCommand,
  'put-archive': async () => (await import('../control/commands/put-archive-command.js')).putArchiveCommand,
  'put-image': async () => (await import('../control/commands/put-image-command.js')).putImageCommand,
  reports: async () => (await import('../control/commands/mesh-command.js')).reportsCommand,
  status: async () => (await import('../control/commands/mesh-command.js')).statusCommand,
  history: async () => (await import('../control/commands/history-command.js')).historyCommand,
  show: async () => (await import('../control/commands/history-command.js')).showCommand,
  diff: async () => (await import('../control/commands/history-command.js')).diffCommand,
  rollback: async () => (await import('../control/commands/rollback-command.js')).rollbackCommand,
  'node-key': async () => (await import('../control/commands/node-key-command.js')).nodeKeyCommand,
  'node-creds': async () => (await import('../control/commands/node-creds-command.js')).nodeCredsCommand,
  'node-remove': async () => (await import('../control/commands/node-remove-command.js')).nodeRemoveCommand,
  'account-push': async () => (await import('../control/commands/account-command.js')).accountPushCommand,
  'resolver-upgrade': async () => (await import('../control/commands/account-command.js')).resolverUpgradeCommand,
  serve: async () => (await import('../control/commands/serve-command.js')).serveCommand,
  label: async () => (await import('../control/commands/label-command.js')).labelCommand,
  trust: async () => (await import('../control/commands/trust-command.js')).trustCommand,
  approve: async () => (await import('../control/commands/proposals-command.js')).approveCommand,
  proposals: async () => (await import('../control/commands/proposals-command.js')).proposalsCommand,
  site: async () => (await import('../control/commands/site-command.js')).siteCommand,
};

/** Every command reads the mesh directory's defaults (`--mesh DIR`, MESH_DIR) for the flags it was not given. */
const withMesh = (name: string, load: () => Promise<Command>) => async (): Promise<Command> => {
  const [command, { withMeshDefaults }] = await Promise.all([load(), import('../control/commands/mesh-defaults.js')]);
  return (ctx) => command(withMeshDefaults(ctx, meshctlProgram, name));
};

export function main(argv: readonly string[]): Promise<number> {
  const table = Object.fromEntries(Object.entries(commands).map(([name, load]) => [name, withMesh(name, load)]));
  // The completion script needs no mesh: it is made from the program's spec alone.
  table.completion = async () => (await import('../cli/completion.js')).completionCommand(meshctlProgram);
  return runProgram(meshctlProgram, table, argv);
}
