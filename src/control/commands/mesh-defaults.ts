import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { MESH_VALUES_FILE, readMeshDir } from '../setup/mesh-dir.js';
import { usageError } from '../../core/system/errors.js';
import type { ProgramSpec } from '../../cli/args.js';
import type { CommandContext } from '../../cli/context.js';
import { stringFlag } from '../../cli/context.js';

/** The environment variable that names the mesh directory when `--mesh` is not given. */
export const MESH_DIR_ENV = 'MESH_DIR';

/** The flag the mesh directory's keepHistory travels in: the retention a history made now gets, never a change to one that exists. */
export const MESH_KEEP_HISTORY = 'mesh-keep-history';

/**
 * The command's flags with what the mesh directory (`--mesh DIR`, or MESH_DIR) gives for those not on
 * the line and that the command takes: the servers, meshctl's credentials, the signing key, the
 * account's signing key, the per-node values (values.json) when it keeps them, and the history's retention
 * for a history made now. A flag on the line always wins; without a mesh directory nothing changes.
 */
export function withMeshDefaults(ctx: CommandContext, spec: ProgramSpec, command: string, env: NodeJS.ProcessEnv = process.env): CommandContext {
  const dir = stringFlag(ctx.flags, 'mesh') ?? (env[MESH_DIR_ENV] || undefined);
  if (dir === undefined || command === 'init') return ctx;
  const mesh = readMeshDir(dir);
  const accepted = new Set([...spec.globals, ...spec.commands[command]!.options]);
  const given: Record<string, string> = { server: mesh.servers.join(','), creds: mesh.creds, key: mesh.key, 'account-key': mesh.accountKey, account: mesh.account };
  // The operator's per-node values, when the directory keeps them.
  const values = join(dir, MESH_VALUES_FILE);
  if (existsSync(values)) given.values = values;
  // The history's retention as init was told: what a history made now keeps (never a change to one that exists).
  if (mesh.keepHistory !== undefined) given[MESH_KEEP_HISTORY] = mesh.keepHistory;
  const flags = { ...ctx.flags };
  for (const [name, value] of Object.entries(given)) if ((accepted.has(name) || name === MESH_KEEP_HISTORY) && flags[name] === undefined) flags[name] = value;
  ctx.log.debug({ mesh: dir }, 'defaults from the mesh directory');
  return { ...ctx, flags };
}

/** The mesh directory of `--mesh DIR` or MESH_DIR; refused, saying so, for a command that cannot work without one. */
export function meshDirOf(ctx: CommandContext, what: string, env: NodeJS.ProcessEnv = process.env): string {
  const dir = stringFlag(ctx.flags, 'mesh') ?? (env[MESH_DIR_ENV] || undefined);
  if (dir === undefined) throw usageError(`${what} needs the mesh directory made by meshctl init (its operator key signs the accounts): give --mesh DIR or set ${MESH_DIR_ENV}`);
  return resolve(dir);
}

/** The mesh directory, when one is given; undefined without one. */
export function givenMeshDir(ctx: CommandContext, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dir = stringFlag(ctx.flags, 'mesh') ?? (env[MESH_DIR_ENV] || undefined);
  return dir === undefined ? undefined : resolve(dir);
}
