import { join, resolve } from 'node:path';
import { newOperatorKey } from '../../declaration/envelope.js';
import { makeMeshAccounts, type MeshAccounts } from '../../setup/accounts.js';
import { MESH_FILE, MESH_LAYOUT, writeMeshDir, type MeshFile } from '../../setup/mesh-dir.js';
import { clientUrl, leafUrl, placeServers, serverConfig, type ServerPlace } from '../../setup/server-conf.js';
import { EXIT, usageError } from '../../system/errors.js';
import { output, stringFlag, type CommandContext } from '../context.js';
import { listFlag } from '../link-flags.js';
import { countFlag, portsFlag } from './mesh.js';
import { PUBLIC_FILE, SEED_FILE } from './keys.js';

const MAX_SERVERS = 9;

/** Every file of a new mesh directory. */
function meshFiles(dir: string, accounts: MeshAccounts, signing: { seed: string; publicKey: string }, places: ServerPlace[]) {
  const nats = (name: string) => join(MESH_LAYOUT.natsDir, name);
  const leafnodes = places.flatMap((p) => leafUrl(p) ?? []);
  const mesh: MeshFile = { version: 1, servers: places.map(clientUrl), leafnodes, creds: MESH_LAYOUT.controlCreds, key: SEED_FILE, accountKey: MESH_LAYOUT.accountSigning, account: accounts.account.publicKey };
  return [
    { path: SEED_FILE, content: `${signing.seed}\n`, secret: true },
    { path: PUBLIC_FILE, content: `${signing.publicKey}\n` },
    { path: MESH_LAYOUT.controlCreds, content: accounts.controlCreds, secret: true },
    { path: nats('operator.nk'), content: `${accounts.operator.seed}\n`, secret: true },
    { path: MESH_LAYOUT.operatorJwt, content: `${accounts.operator.jwt}\n` },
    { path: nats('account.nk'), content: `${accounts.account.seed}\n`, secret: true },
    { path: MESH_LAYOUT.accountJwt, content: `${accounts.account.jwt}\n` },
    { path: MESH_LAYOUT.accountSigning, content: `${accounts.accountSigning.seed}\n`, secret: true },
    { path: nats('system.nk'), content: `${accounts.system.seed}\n`, secret: true },
    { path: MESH_LAYOUT.systemJwt, content: `${accounts.system.jwt}\n` },
    ...places.map((p) => ({ path: MESH_LAYOUT.serverConf(p, places.length), content: serverConfig(p, places, accounts) })),
    { path: MESH_FILE, content: `${JSON.stringify(mesh, null, 2)}\n` },
  ];
}


/**
 * `meshctl init DIR [--servers N] [--host H…] [--port P…] [--cluster-port P…]`: a new mesh in
 * operator mode, least privilege from the first command. Makes the operator that signs the NATS
 * accounts, the mesh's account (JetStream on) with the signing key that issues each host its own
 * credentials, the system account, meshctl's own credentials, the key that signs declarations, and the
 * configuration of each nats-server; DIR is then meshctl's defaults (`--mesh DIR` or `MESH_DIR`).
 */
export async function initCommand(ctx: CommandContext): Promise<number> {
  if (stringFlag(ctx.flags, 'leaf') !== undefined) return (await import('./init-leaf.js')).initLeafCommand(ctx);
  if (ctx.args[0] === undefined) throw usageError("'init' needs DIR (or --leaf SITE, for a site of the mesh MESH_DIR or --mesh names)");
  const dir = resolve(ctx.args[0]);
  const hosts = listFlag(ctx.flags, 'host');
  const count = countFlag(ctx, 'servers', 1) ?? (hosts.length > 1 ? hosts.length : 1);
  if (count > MAX_SERVERS) throw usageError(`--servers ${count}: at most ${MAX_SERVERS} (a JetStream cluster needs no more; hosts are clients, not servers)`);
  const places = placeServers({ count, hosts: hosts.length ? hosts : ['127.0.0.1'], ports: portsFlag(ctx, 'port'), clusterPorts: portsFlag(ctx, 'cluster-port'), leafPorts: portsFlag(ctx, 'leaf-port'), storeDir: (name) => join(dir, 'jetstream', name) });
  if (typeof places === 'string') throw usageError(places);
  const [accounts, signing] = await Promise.all([makeMeshAccounts(), newOperatorKey()]);
  const files = meshFiles(dir, accounts, signing, places);
  writeMeshDir(dir, files);
  const confs = places.map((p) => join(dir, MESH_LAYOUT.serverConf(p, places.length)));
  const summary = { dir, operatorKey: signing.publicKey, account: accounts.account.publicKey, servers: places.map(clientUrl), serverConfigs: confs, secrets: files.filter((f) => f.secret).map((f) => join(dir, f.path)) };
  output(ctx, summary, () => describeInit(dir, summary, places));
  return EXIT.ok;
}

function describeInit(dir: string, summary: { operatorKey: string; account: string; servers: string[]; serverConfigs: string[] }, places: ServerPlace[]): string {
  const at = (p: string) => join(dir, p);
  return [
    `a mesh in ${dir}, in operator mode: every client needs credentials, each host gets its own`,
    `  declarations are signed by  ${at(SEED_FILE)} (public key ${summary.operatorKey})`,
    `  meshctl connects with       ${at(MESH_LAYOUT.controlCreds)} (the mesh's account, JetStream on)`,
    `  hosts' credentials come from ${at(MESH_LAYOUT.accountSigning)} (the account's signing key)`,
    ...summary.serverConfigs.map((conf, i) => `  nats-server ${places[i]!.name.padEnd(15)} ${conf} (clients at ${summary.servers[i]}, sites' leaf nodes at ${leafUrl(places[i]!)})`),
    `  the secrets are 0600 (the seeds, meshctl.creds): keep ${dir} on the control machine`,
    '',
    'next:',
    ...summary.serverConfigs.map((conf) => `  nats-server -c ${conf}${places.length > 1 ? '   # on its host' : ''}`),
    `  export MESH_DIR=${dir}`,
    '  meshctl node-key NODE --out NODE.nk --label role=web      # the host\'s own key, pinned, with its labels',
    '  meshctl node-creds NODE --out NODE.creds                   # its NATS credentials: its own subjects only',
    '  meshctl bundle DECLARATION.json --node NODE --node-key NODE.nk --embed-creds NODE.creds --out NODE.bundle.json',
    '  mesh-host install --bundle NODE.bundle.json --mode converged   # on the host',
    '  meshctl init --leaf SITE --port 4222 --host ADDRESS          # a site behind its own leaf node',
  ].join('\n');
}
