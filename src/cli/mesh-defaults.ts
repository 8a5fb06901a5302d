import { readMeshDir } from '../setup/mesh-dir.js';
import type { ProgramSpec } from './args.js';
import type { CommandContext } from './context.js';
import { stringFlag } from './context.js';

/** The environment variable that names the mesh directory when `--mesh` is not given. */
export const MESH_DIR_ENV = 'MESH_DIR';

/**
 * The command's flags with what the mesh directory (`--mesh DIR`, or MESH_DIR) gives for those not on
 * the line and that the command takes: the servers, meshctl's credentials, the signing key, the
 * account's signing key. A flag on the line always wins; without a mesh directory nothing changes.
 */
export function withMeshDefaults(ctx: CommandContext, spec: ProgramSpec, command: string, env: NodeJS.ProcessEnv = process.env): CommandContext {
  const dir = stringFlag(ctx.flags, 'mesh') ?? (env[MESH_DIR_ENV] || undefined);
  if (dir === undefined || command === 'init') return ctx;
  const mesh = readMeshDir(dir);
  const accepted = new Set([...spec.globals, ...spec.commands[command]!.options]);
  const given: Record<string, string> = { server: mesh.servers.join(','), creds: mesh.creds, key: mesh.key, 'account-key': mesh.accountKey, account: mesh.account };
  const flags = { ...ctx.flags };
  for (const [name, value] of Object.entries(given)) if (accepted.has(name) && flags[name] === undefined) flags[name] = value;
  ctx.log.debug({ mesh: dir }, 'defaults from the mesh directory');
  return { ...ctx, flags };
}
