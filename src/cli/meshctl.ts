import { runProgram, type Command, type CommandTable } from './main.js';
import { meshctlProgram } from './programs.js';

const commands: CommandTable = {
  init: async () => (await import('./commands/init.js')).initCommand,
  keygen: async () => (await import('./commands/keys.js')).keygenCommand,
  sign: async () => (await import('./commands/keys.js')).signCommand,
  bundle: async () => (await import('./commands/bundle.js')).bundleCommand,
  send: async () => (await import('./commands/mesh.js')).sendCommand,
  plan: async () => (await import('./commands/plan.js')).planCommand,
  rollout: async () => (await import('./commands/rollout.js')).rolloutCommand,
  'put-archive': async () => (await import('./commands/put-archive.js')).putArchiveCommand,
  'put-image': async () => (await import('./commands/put-image.js')).putImageCommand,
  reports: async () => (await import('./commands/mesh.js')).reportsCommand,
  status: async () => (await import('./commands/mesh.js')).statusCommand,
  'node-key': async () => (await import('./commands/node-key.js')).nodeKeyCommand,
  'node-creds': async () => (await import('./commands/node-creds.js')).nodeCredsCommand,
  serve: async () => (await import('./commands/serve.js')).serveCommand,
  label: async () => (await import('./commands/label.js')).labelCommand,
  site: async () => (await import('./commands/site.js')).siteCommand,
};

/** Every command reads the mesh directory's defaults (`--mesh DIR`, MESH_DIR) for the flags it was not given. */
const withMesh = (name: string, load: () => Promise<Command>) => async (): Promise<Command> => {
  const [command, { withMeshDefaults }] = await Promise.all([load(), import('./mesh-defaults.js')]);
  return (ctx) => command(withMeshDefaults(ctx, meshctlProgram, name));
};

export function main(argv: readonly string[]): Promise<number> {
  return runProgram(meshctlProgram, Object.fromEntries(Object.entries(commands).map(([name, load]) => [name, withMesh(name, load)])), argv);
}
