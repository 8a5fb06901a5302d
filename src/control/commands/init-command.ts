import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { newOperatorKey } from '../../core/declaration/envelope.js';
import { makeMeshAccounts, type MeshAccounts } from '../setup/nats-accounts.js';
import { MESH_FILE, MESH_LAYOUT, writeMeshDir, type MeshFile } from '../setup/mesh-dir.js';
import { clientUrl, leafUrl, placeServers, serverConfig, type ServerPlace } from '../setup/server-conf.js';
import { EXIT, usageError } from '../../core/system/errors.js';
import { output, stringFlag, type CommandContext } from '../../cli/context.js';
import { listFlag } from '../../cli/link-flags.js';
import { countFlag, keepHistoryMs, portsFlag } from './mesh-flags.js';
import { PUBLIC_FILE, SEED_FILE } from './keys-command.js';
import { newNkeySeed, nkeySeed } from '../../core/declaration/nkey.js';
import { signRoot, TRUST_ROOT_KIND, type TrustRecord } from '../../core/declaration/trust-root.js';
import { TRUST_LAYOUT } from './mesh-trust.js';

/** The words written beside the recovery keys and said by init: they are for the day the control key is lost. */
const RECOVERY_WORDS = (dir: string, files: string[], threshold: number) => [
  'MOVE THESE KEYS OFF THIS MACHINE.',
  '',
  `${files.join(', ')}: the mesh's recovery key${files.length === 1 ? '' : 's'} (${threshold} of ${files.length} needed).`,
  'They replace the control key when it is lost or stolen: meshctl trust recover --recovery-key FILE --to NEW-KEY.',
  'Anyone who holds them can take the mesh; whoever steals the control machine must not find them here.',
  'Copy them to offline storage (a USB key in a safe, a paper copy), check the copy, then delete them from',
  `${dir}.`,
  '',
].join('\n');

/** Version 1 of the trust root: the operator key (threshold 1) and the recovery keys, signed by the control key. */
function firstTrust(signing: { seed: string; publicKey: string }, recoverySeeds: string[], recoveryThreshold: number, releaseKeys: string[]): TrustRecord {
  const recovery = recoverySeeds.map((seed) => (nkeySeed(seed, 'operator') as { publicKey: string }).publicKey);
  const release = releaseKeys.length ? { release: { keys: releaseKeys, threshold: 1 } } : {};
  return signRoot({ kind: TRUST_ROOT_KIND, version: 1, control: { keys: [signing.publicKey], threshold: 1 }, recovery: { keys: recovery, threshold: recoveryThreshold }, ...release }, [signing.seed]);
}

const MAX_SERVERS = 9;

/** A release key as given: its public key (O…), or a seed file whose public key it is. */
function releaseKeyOf(given: string): string {
  if (/^O[A-Z2-7]{55}$/.test(given)) return given;
  const seed = nkeySeed(readFileSync(given, 'utf8'), 'operator');
  if (typeof seed === 'string') throw usageError(`--release-key ${given}: neither an operator public key (O…) nor a file holding an operator seed (${seed})`);
  return seed.publicKey;
}

/** Every file of a new mesh directory. */
function meshFiles(dir: string, accounts: MeshAccounts, signing: { seed: string; publicKey: string }, places: ServerPlace[], keepHistory: string | undefined, recovery: { seeds: string[]; threshold: number }, releaseKeys: string[]) {
  const nats = (name: string) => join(MESH_LAYOUT.natsDir, name);
  const leafnodes = places.flatMap((p) => leafUrl(p) ?? []);
  const mesh: MeshFile = {
    version: 1,
    servers: places.map(clientUrl),
    serverNames: places.map((p) => p.name),
    leafnodes,
    creds: MESH_LAYOUT.controlCreds,
    systemCreds: MESH_LAYOUT.systemCreds,
    key: SEED_FILE,
    accountKey: MESH_LAYOUT.accountSigning,
    account: accounts.account.publicKey,
    ...(keepHistory === undefined ? {} : { keepHistory }),
  };
  return [
    { path: SEED_FILE, content: `${signing.seed}\n`, secret: true },
    { path: PUBLIC_FILE, content: `${signing.publicKey}\n` },
    { path: MESH_LAYOUT.controlCreds, content: accounts.controlCreds, secret: true },
    { path: MESH_LAYOUT.operatorSeed, content: `${accounts.operator.seed}\n`, secret: true },
    { path: MESH_LAYOUT.operatorJwt, content: `${accounts.operator.jwt}\n` },
    { path: nats('account.nk'), content: `${accounts.account.seed}\n`, secret: true },
    { path: MESH_LAYOUT.accountJwt, content: `${accounts.account.jwt}\n` },
    { path: MESH_LAYOUT.accountSigning, content: `${accounts.accountSigning.seed}\n`, secret: true },
    { path: MESH_LAYOUT.systemSeed, content: `${accounts.system.seed}\n`, secret: true },
    { path: MESH_LAYOUT.systemJwt, content: `${accounts.system.jwt}\n` },
    { path: MESH_LAYOUT.systemCreds, content: accounts.systemCreds, secret: true },
    ...places.map((p) => ({ path: MESH_LAYOUT.serverConf(p, places.length), content: serverConfig(p, places, accounts) })),
    { path: TRUST_LAYOUT.version(1), content: `${JSON.stringify(firstTrust(signing, recovery.seeds, recovery.threshold, releaseKeys), null, 2)}\n` },
    ...recovery.seeds.map((seed, i) => ({ path: TRUST_LAYOUT.recoveryKey(i + 1), content: `${seed}\n`, secret: true })),
    { path: TRUST_LAYOUT.recoveryWords, content: RECOVERY_WORDS(join(dir, TRUST_LAYOUT.recoveryDir), recovery.seeds.map((_, i) => TRUST_LAYOUT.recoveryKey(i + 1)), recovery.threshold) },
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
  const places = placeServers({ count, hosts: hosts.length ? hosts : ['127.0.0.1'], ports: portsFlag(ctx, 'port'), clusterPorts: portsFlag(ctx, 'cluster-port'), leafPorts: portsFlag(ctx, 'leaf-port'), storeDir: (name) => join(dir, 'jetstream', name), resolverDir: (name) => join(dir, MESH_LAYOUT.resolverDir(name)) });
  if (typeof places === 'string') throw usageError(places);
  // How long the mesh keeps each declaration a node was given: said now, the history is made with it.
  const keepHistory = stringFlag(ctx.flags, 'keep-history');
  if (keepHistory !== undefined && keepHistoryMs(keepHistory) === undefined) throw usageError(`--keep-history ${keepHistory}: how long the mesh keeps each declaration, as 90d, 12w, 36h or forever`);
  const recoveryCount = countFlag(ctx, 'recovery-keys', 1) ?? 1;
  const recoveryThreshold = countFlag(ctx, 'recovery-threshold', 1) ?? 1;
  if (recoveryThreshold > recoveryCount) throw usageError(`--recovery-threshold ${recoveryThreshold}: at most the number of recovery keys (${recoveryCount})`);
  // The keys whose signature a release must carry for hosts to install or update to it: public keys (O…) or seed files.
  const releaseKeys = [...new Set(listFlag(ctx.flags, 'release-key').map((given) => releaseKeyOf(given)))];
  const [accounts, signing] = await Promise.all([makeMeshAccounts(), newOperatorKey()]);
  const recoverySeeds = Array.from({ length: recoveryCount }, () => newNkeySeed('operator'));
  const files = meshFiles(dir, accounts, signing, places, keepHistory, { seeds: recoverySeeds, threshold: recoveryThreshold }, releaseKeys);
  writeMeshDir(dir, files);
  const confs = places.map((p) => join(dir, MESH_LAYOUT.serverConf(p, places.length)));
  const recoveryFiles = recoverySeeds.map((_, i) => join(dir, TRUST_LAYOUT.recoveryKey(i + 1)));
  const summary = { dir, operatorKey: signing.publicKey, account: accounts.account.publicKey, servers: places.map(clientUrl), serverConfigs: confs, secrets: files.filter((f) => f.secret).map((f) => join(dir, f.path)), trustVersion: 1, recoveryKeys: recoveryFiles, recoveryThreshold };
  output(ctx, summary, () => describeInit(dir, summary, places));
  return EXIT.ok;
}

function describeInit(dir: string, summary: { operatorKey: string; account: string; servers: string[]; serverConfigs: string[]; recoveryKeys: string[] }, places: ServerPlace[]): string {
  const at = (p: string) => join(dir, p);
  return [
    `a mesh in ${dir}, in operator mode: every client needs credentials, each host gets its own`,
    `  declarations are signed by  ${at(SEED_FILE)} (public key ${summary.operatorKey})`,
    `  meshctl connects with       ${at(MESH_LAYOUT.controlCreds)} (the mesh's account, JetStream on)`,
    `  hosts' credentials come from ${at(MESH_LAYOUT.accountSigning)} (the account's signing key)`,
    `  the servers keep the accounts in NATS's full resolver (${at('jwt')}); meshctl pushes each new version with ${at(MESH_LAYOUT.systemCreds)}`,
    ...summary.serverConfigs.map((conf, i) => `  nats-server ${places[i]!.name.padEnd(15)} ${conf} (clients at ${summary.servers[i]}, sites' leaf nodes at ${leafUrl(places[i]!)})`),
    `  the trust root (version 1)  ${at(TRUST_LAYOUT.version(1))}: hosts trust the keys it names, and follow each rotation`,
    `  the secrets are 0600 (the seeds, meshctl.creds): keep ${dir} on the control machine`,
    '',
    `MOVE THE RECOVERY KEY${summary.recoveryKeys.length === 1 ? '' : 'S'} OFF THIS MACHINE: ${summary.recoveryKeys.join(', ')}`,
    '  it replaces a lost or stolen control key (meshctl trust recover); copy it to offline storage, then delete it here',
    '',
    'next:',
    ...summary.serverConfigs.map((conf) => `  nats-server -c ${conf}${places.length > 1 ? '   # on its host' : ''}`),
    `  export MESH_DIR=${dir}`,
    '  meshctl node-key NODE --out NODE.nk --label role=web      # the host\'s own key, pinned, with its labels',
    '  meshctl node-creds NODE --out NODE.creds                   # its NATS credentials: its own subjects only',
    '  meshctl bundle DECLARATION.json --node NODE --node-key NODE.nk --embed-creds NODE.creds --out NODE.bundle.json',
    '  mesh-host install --bundle NODE.bundle.json --mode converged   # on the host',
    '  meshctl node-remove NODE                                   # takes a host out: its user revoked on every server',
    '  meshctl init --leaf SITE --port 4222 --host ADDRESS          # a site behind its own leaf node',
  ].join('\n');
}
