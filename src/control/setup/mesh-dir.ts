import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { refused } from '../../core/system/errors.js';
import type { ServerPlace } from './server-conf.js';

/** The file in a mesh directory that says where everything is: meshctl's defaults. */
export const MESH_FILE = 'mesh.json';

/** The per-node values a mesh directory may keep: the operator writes it, meshctl reads it when it sends. */
export const MESH_VALUES_FILE = 'values.json';

/** The names of a mesh directory's files, relative to it. */
export const MESH_LAYOUT = {
  controlCreds: 'meshctl.creds',
  natsDir: 'nats',
  operatorJwt: 'nats/operator.jwt',
  accountJwt: 'nats/account.jwt',
  systemJwt: 'nats/system.jwt',
  accountSigning: 'nats/account-signing.nk',
  /** The operator's seed: it signs every version of the accounts' JWTs. */
  operatorSeed: 'nats/operator.nk',
  systemSeed: 'nats/system.nk',
  /** A user of the system account: meshctl pushes the accounts' JWTs to the servers with it. */
  systemCreds: 'nats/system.creds',
  /** Every user meshctl issued for a node, and which were revoked, one file a node. */
  nodeUsers: (node: string) => `nats/users/${node}.json`,
  /** Where each server's account resolver keeps the accounts' JWTs (beside its JetStream store). */
  resolverDir: (name: string) => `jwt/${name}`,
  serverConf: (place: ServerPlace, count: number) => (count === 1 ? 'nats-server.conf' : `nats-server-${place.name.replace(/^mesh-/, '')}.conf`),
  /** A site's leaf node: its configuration and its credentials, in one folder to copy to the site. */
  siteDir: (site: string) => `sites/${site}`,
} as const;

/** What a mesh directory gives meshctl when a flag is not on the line. */
export interface MeshDefaults {
  /** The servers' client URLs. */
  servers: string[];
  /** meshctl's own credentials file. */
  creds: string;
  /** The operator's seed that signs declarations. */
  key: string;
  /** The account signing key that issues hosts' credentials, and the account it signs for. */
  accountKey: string;
  account: string;
  /** Where sites' leaf nodes reach the servers (nats-leaf://…); none in a mesh made before leaf nodes. */
  leafnodes?: string[];
  /** How long the history made for this mesh keeps each declaration (90d, forever), as init was told. */
  keepHistory?: string;
  /**
   * The servers' names (`server_name`), which answer a push of the accounts' JWTs; with `systemCreds`,
   * the mesh's servers run NATS's full account resolver. A mesh made before it has neither: its servers
   * preload the accounts in memory (`meshctl resolver-upgrade` moves it over).
   */
  serverNames?: string[];
  /** A user of the system account that pushes the accounts' JWTs. */
  systemCreds?: string;
}

/** The mesh directory's file as written: paths relative to the directory, so it can be moved whole. */
export type MeshFile = { version: 1 } & MeshDefaults;

/** Reads a mesh directory's defaults, its paths made absolute. */
export function readMeshDir(dir: string): MeshDefaults {
  const path = join(dir, MESH_FILE);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw refused(`${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): is ${dir} a mesh directory made by meshctl init?`);
  }
  let file: Partial<MeshFile>;
  try {
    file = JSON.parse(text) as Partial<MeshFile>;
  } catch (err) {
    throw refused(`${path}: not JSON: ${(err as Error).message}`);
  }
  const problems = (['creds', 'key', 'accountKey', 'account'] as const).filter((k) => typeof file[k] !== 'string').map((k) => `$.${k}: a string is needed`);
  if (!Array.isArray(file.servers) || !file.servers.every((s) => typeof s === 'string')) problems.push('$.servers: a list of URLs is needed');
  if (problems.length > 0) throw refused(`${path} is not a mesh directory's file`, problems);
  const at = (p: string) => (isAbsolute(p) ? p : resolve(dir, p));
  const notList = (value: unknown) => value !== undefined && (!Array.isArray(value) || !value.every((s) => typeof s === 'string'));
  if (notList(file.leafnodes)) throw refused(`${path} is not a mesh directory's file`, ['$.leafnodes: a list of URLs is needed']);
  if (notList(file.serverNames)) throw refused(`${path} is not a mesh directory's file`, ['$.serverNames: a list of names is needed']);
  if (file.systemCreds !== undefined && typeof file.systemCreds !== 'string') throw refused(`${path} is not a mesh directory's file`, ['$.systemCreds: a path is needed']);
  if (file.keepHistory !== undefined && typeof file.keepHistory !== 'string') throw refused(`${path} is not a mesh directory's file`, ['$.keepHistory: a duration (90d) or forever is needed']);
  return {
    servers: file.servers!,
    creds: at(file.creds!),
    key: at(file.key!),
    accountKey: at(file.accountKey!),
    account: file.account!,
    ...(file.leafnodes ? { leafnodes: file.leafnodes } : {}),
    ...(file.serverNames ? { serverNames: file.serverNames } : {}),
    ...(file.systemCreds ? { systemCreds: at(file.systemCreds) } : {}),
    ...(file.keepHistory ? { keepHistory: file.keepHistory } : {}),
  };
}

/**
 * Writes the files of a new mesh directory: refused whole, before anything is written, when the
 * directory holds anything already; secrets 0600, the rest 0644, the directories 0700.
 */
export function writeMeshDir(dir: string, files: Array<{ path: string; content: string; secret?: boolean }>): void {
  if (existsSync(dir) && readdirSync(dir).length > 0) throw refused(`${dir} is not empty; a mesh directory is never written over (its keys would be lost): choose a new one`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const file of files) {
    const path = join(dir, file.path);
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileSync(path, file.content, { mode: file.secret ? 0o600 : 0o644, flag: 'wx' });
  }
}
