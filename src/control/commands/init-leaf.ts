import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { accountKeyPair, issueCreds, userOfCreds } from '../setup/nats-accounts.js';
import { leafConfig, siteNameProblem } from '../setup/leaf-conf.js';
import { MESH_LAYOUT, readMeshDir, writeMeshDir } from '../setup/mesh-dir.js';
import { urlHost, type PublicAccounts } from '../setup/server-conf.js';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import { output, stringFlag, type CommandContext } from '../../cli/context.js';
import { listFlag } from '../../cli/link-flags.js';
import { MESH_DIR_ENV } from './mesh-defaults.js';
import { portsFlag } from './mesh-flags.js';

/** The files of a site's folder. */
export const SITE_LAYOUT = { conf: 'nats-server.conf', creds: 'leaf.creds', systemCreds: 'leaf-system.creds' } as const;

const DEFAULT_LEAF_CLIENT_PORT = 4222;

/** A file of the mesh directory, trimmed, or a refusal naming it. */
function meshFile(dir: string, rel: string): string {
  const path = join(dir, rel);
  try {
    return readFileSync(path, 'utf8').trim();
  } catch (err) {
    throw refused(`${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): is ${dir} a mesh directory made by meshctl init?`);
  }
}

/** The accounts' JWTs as the mesh directory holds them: what the leaf's operator mode needs, no seed but the account signing key's. */
function publicAccounts(dir: string, account: string): PublicAccounts {
  const systemJwt = meshFile(dir, MESH_LAYOUT.systemJwt);
  const system = userOfCreds(`-----BEGIN NATS USER JWT-----\n${systemJwt}\n`);
  if (!system) throw refused(`${join(dir, MESH_LAYOUT.systemJwt)}: not a JWT`);
  return { operator: { jwt: meshFile(dir, MESH_LAYOUT.operatorJwt) }, account: { publicKey: account, jwt: meshFile(dir, MESH_LAYOUT.accountJwt) }, system: { publicKey: system, jwt: systemJwt } };
}

/**
 * `meshctl init --leaf SITE [--host H] [--port P] [--hub URL…]`: a site's leaf node for the mesh of
 * `--mesh DIR` (or MESH_DIR, or DIR): its nats-server's configuration and the credentials it connects
 * to the hub with, in DIR/sites/SITE, a folder to copy to the site's server. The leaf runs in operator
 * mode over the mesh's own accounts, so every host of the site connects to it with the credentials it
 * already has; the hub is reached through the servers' leaf node ports, which meshctl init opened.
 */
export async function initLeafCommand(ctx: CommandContext): Promise<number> {
  const site = stringFlag(ctx.flags, 'leaf')!;
  const nameProblem = siteNameProblem(site);
  if (nameProblem) throw usageError(`--leaf ${site}: ${nameProblem}`);
  const given = ctx.args[0] ?? stringFlag(ctx.flags, 'mesh') ?? (process.env[MESH_DIR_ENV] || undefined);
  if (given === undefined) throw usageError(`--leaf ${site}: which mesh? give --mesh DIR (or set ${MESH_DIR_ENV})`);
  const dir = resolve(given);
  const hosts = listFlag(ctx.flags, 'host');
  const ports = portsFlag(ctx, 'port');
  if (hosts.length > 1 || ports.length > 1) throw usageError('a leaf node is one server: one --host and one --port');
  const mesh = readMeshDir(dir);
  const hubs = listFlag(ctx.flags, 'hub');
  const uplinks = hubs.length > 0 ? hubs : (mesh.leafnodes ?? []);
  if (uplinks.length === 0) throw refused(`${join(dir, 'mesh.json')} names no leaf node port (a mesh made before leaf nodes): add a leafnodes { listen: "HOST:7422" } block to each server's configuration and give its URL with --hub nats-leaf://HOST:7422`);
  const bad = uplinks.find((u) => !/^(nats-leaf|nats|tls):\/\/[^\s/]+:\d+$/.test(u));
  if (bad) throw usageError(`--hub ${bad}: a leaf node URL (nats-leaf://HOST:PORT)`);
  const accounts = publicAccounts(dir, mesh.account);
  const signer = await accountKeyPair(meshFile(dir, MESH_LAYOUT.accountSigning));
  if (typeof signer === 'string') throw refused(`${join(dir, MESH_LAYOUT.accountSigning)}: ${signer}`);
  const siteDir = join(dir, MESH_LAYOUT.siteDir(site));
  const credsPath = join(siteDir, SITE_LAYOUT.creds);
  const system = await accountKeyPair(meshFile(dir, MESH_LAYOUT.systemSeed));
  if (typeof system === 'string') throw refused(`${join(dir, MESH_LAYOUT.systemSeed)}: ${system}`);
  const systemCredsPath = join(siteDir, SITE_LAYOUT.systemCreds);
  const place = { site, host: hosts[0] ?? '127.0.0.1', port: ports[0] ?? DEFAULT_LEAF_CLIENT_PORT, hubs: uplinks, credsPath, systemCredsPath, storeDir: join(siteDir, 'jetstream'), resolverDir: join(siteDir, 'jwt') };
  // The leaf's own users of the mesh's account and of the system account, made for it alone: each can be revoked without touching any host.
  const [creds, systemCreds] = await Promise.all([
    issueCreds({ name: `leaf-${site}`, signer, account: mesh.account }),
    issueCreds({ name: `leaf-${site}-system`, signer: system, account: system.getPublicKey() }),
  ]);
  writeMeshDir(siteDir, [
    { path: SITE_LAYOUT.creds, content: creds, secret: true },
    { path: SITE_LAYOUT.systemCreds, content: systemCreds, secret: true },
    { path: SITE_LAYOUT.conf, content: leafConfig(place, accounts) },
  ]);
  const conf = join(siteDir, SITE_LAYOUT.conf);
  const url = `nats://${urlHost(place.host)}:${place.port}`;
  const summary = { site, dir: siteDir, serverConfig: conf, creds: credsPath, clients: url, hubs: uplinks };
  output(ctx, summary, () =>
    [
      `the site ${site}'s leaf node in ${siteDir}: operator mode over the mesh's accounts, its uplink to ${uplinks.join(', ')}`,
      `  its credentials  ${credsPath} and ${systemCredsPath} (0600; the configuration names these paths: copy the folder to the same path on the site's server)`,
      '',
      'next:',
      `  nats-server -c ${conf}   # on the site's server`,
      `  meshctl site ${site}   # once the leaf is up: the site's copy of the declarations, its reports' store and forward`,
      `  the site's hosts connect to ${url} (their bundle's --server), with the credentials meshctl node-creds gave them`,
    ].join('\n'),
  );
  return EXIT.ok;
}
