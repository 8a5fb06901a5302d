import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeDurably } from '../../core/system/durable.js';
import { EXIT, refused } from '../../core/system/errors.js';
import { MESH_FILE, MESH_LAYOUT, readMeshDir } from '../setup/mesh-dir.js';
import { describePush, meshDirFile, pushAccount, pushComplete, resolverMesh } from '../setup/account-push.js';
import { accountKeyPair, issueCreds, systemAccountJwt } from '../setup/nats-accounts.js';
import { lazy } from '../../core/system/interop.js';
import { quoted, resolverLines } from '../setup/server-conf.js';
import { output, type CommandContext } from '../../cli/context.js';
import { meshDirOf } from './mesh-defaults.js';
import { SITE_LAYOUT } from './init-leaf.js';

/**
 * `meshctl account-push`: the account's JWT as the mesh directory holds it, pushed to every server and
 * site again: for one that was down or cut off during a revocation and has not caught up from the others.
 */
export async function accountPushCommand(ctx: CommandContext): Promise<number> {
  const dir = meshDirOf(ctx, `'account-push'`);
  const push = await pushAccount(dir, resolverMesh(dir, readMeshDir(dir), 'account-push'), ctx.log);
  output(ctx, { push }, () => ["the mesh's account JWT, pushed to the servers:", ...describePush(push)].join('\n'));
  return pushComplete(push) ? EXIT.ok : EXIT.failed;
}

const MEMORY_RESOLVER = /^resolver: MEMORY$/m;

/**
 * `meshctl resolver-upgrade`: a mesh made before the full resolver (its servers preload the accounts in
 * memory) moved over, in its directory: a user of the system account for meshctl's pushes, each
 * server's `resolver: MEMORY` replaced by the full resolver (the preload kept, so a server restarted
 * admits the same clients at once), and each site's leaf node given the same resolver and an uplink of
 * the system account (its own user). Every configuration is checked before any is written; the servers
 * take it as each is restarted, one at a time, hosts reconnecting to the others meanwhile.
 */
export async function resolverUpgradeCommand(ctx: CommandContext): Promise<number> {
  const dir = meshDirOf(ctx, `'resolver-upgrade'`);
  const mesh = readMeshDir(dir);
  if (mesh.systemCreds !== undefined) throw refused(`the mesh in ${dir} already runs the full account resolver (${MESH_FILE} names ${mesh.systemCreds}); nothing was changed`);
  const system = await accountKeyPair(meshDirFile(dir, MESH_LAYOUT.systemSeed));
  if (typeof system === 'string') throw refused(`${join(dir, MESH_LAYOUT.systemSeed)}: ${system}`);
  const systemKey = system.getPublicKey();
  const nkeys = await lazy(import('@nats-io/nkeys'));
  const operator = nkeys.fromSeed(new TextEncoder().encode(meshDirFile(dir, MESH_LAYOUT.operatorSeed)));
  // The system account as made before admitted no connection (its JWT had no limits): it is issued
  // again with the limits meshctl's pushes and the sites' uplinks need, and preloaded in its place.
  const systemJwt = await systemAccountJwt(operator, system);
  const oldSystemJwt = meshDirFile(dir, MESH_LAYOUT.systemJwt);
  const withSystem = (text: string) => text.replace(`  ${systemKey}: ${oldSystemJwt}`, `  ${systemKey}: ${systemJwt}`);

  const serverConfs = readdirSync(dir).filter((f) => /^nats-server(-\d+)?\.conf$/.test(f)).sort();
  const servers = serverConfs.map((file) => upgradedServer(dir, file));
  const sitesDir = join(dir, 'sites');
  const sites = existsSync(sitesDir) ? readdirSync(sitesDir).filter((s) => existsSync(join(sitesDir, s, SITE_LAYOUT.conf))) : [];
  const leaves = sites.map((site) => upgradedLeaf(dir, site, systemKey));
  if (servers.length === 0) throw refused(`${dir} holds no server configuration (nats-server.conf, nats-server-N.conf) to upgrade; nothing was changed`);
  const unknown = [...servers, ...leaves].find((c) => !c.text.includes(`  ${systemKey}: ${oldSystemJwt}`));
  if (unknown) throw refused(`${unknown.path} does not preload the system account as ${join(dir, MESH_LAYOUT.systemJwt)} holds it; nothing was changed`);

  const credsOf = (name: string) => issueCreds({ name, signer: system, account: systemKey });
  writeDurably(join(dir, MESH_LAYOUT.systemCreds), Buffer.from(await credsOf('meshctl-system')), 0o600);
  for (const leaf of leaves) writeDurably(leaf.credsPath, Buffer.from(await credsOf(`leaf-${leaf.site}-system`)), 0o600);
  for (const conf of [...servers, ...leaves]) writeDurably(conf.path, Buffer.from(withSystem(conf.text)), 0o644);
  writeDurably(join(dir, MESH_LAYOUT.systemJwt), Buffer.from(`${systemJwt}\n`), 0o644);
  const meshFile = JSON.parse(readFileSync(join(dir, MESH_FILE), 'utf8')) as Record<string, unknown>;
  writeDurably(join(dir, MESH_FILE), Buffer.from(`${JSON.stringify({ ...meshFile, serverNames: servers.map((s) => s.name), systemCreds: MESH_LAYOUT.systemCreds }, null, 2)}\n`), 0o644);

  const summary = { dir, servers: servers.map((s) => ({ name: s.name, conf: s.path })), sites: leaves.map((l) => ({ site: l.site, conf: l.path })) };
  output(ctx, summary, () =>
    [
      `the mesh in ${dir} now keeps its accounts in NATS's full resolver:`,
      ...servers.map((s) => `  ${s.name.padEnd(16)} ${s.path}`),
      ...leaves.map((l) => `  leaf-${l.site.padEnd(11)} ${l.path} (and ${l.credsPath}: copy the folder to the site's server)`),
      '',
      'next: restart each server, one at a time, waiting for it to be ready before the next (its hosts reconnect to the others);',
      "then each site's leaf node. Until a server restarts it keeps the memory resolver, and a revocation does not reach it.",
    ].join('\n'),
  );
  return EXIT.ok;
}

/** A server's configuration with the full resolver in place of the memory one, its resolver folder beside its JetStream store. */
function upgradedServer(dir: string, file: string): { name: string; path: string; text: string } {
  const path = join(dir, file);
  const text = readFileSync(path, 'utf8');
  const name = /^server_name: "([^"]+)"$/m.exec(text)?.[1];
  if (!name || !MEMORY_RESOLVER.test(text)) throw refused(`${path} is not a server configuration meshctl init wrote with the memory resolver (no server_name, or no 'resolver: MEMORY' line); nothing was changed`);
  return { name, path, text: text.replace(MEMORY_RESOLVER, resolverLines(join(dir, MESH_LAYOUT.resolverDir(name))).join('\n')) };
}

/** A site's configuration with the full resolver, and a second uplink binding the system account with the site's own user. */
function upgradedLeaf(dir: string, site: string, systemKey: string): { site: string; path: string; credsPath: string; text: string } {
  const siteDir = join(dir, MESH_LAYOUT.siteDir(site));
  const path = join(siteDir, SITE_LAYOUT.conf);
  const credsPath = join(siteDir, SITE_LAYOUT.systemCreds);
  const text = readFileSync(path, 'utf8');
  const urls = /^ {6}urls: (\[.*\])$/m.exec(text)?.[1];
  const endOfRemotes = /^ {4}\}\n {2}\]$/m;
  if (!urls || !endOfRemotes.test(text) || !MEMORY_RESOLVER.test(text)) throw refused(`${path} is not a site's configuration meshctl init --leaf wrote with the memory resolver; nothing was changed`);
  const systemRemote = ['    }', '    {', `      urls: ${urls}`, `      credentials: ${quoted(credsPath)}`, `      account: ${quoted(systemKey)}`, '    }', '  ]'].join('\n');
  return { site, path, credsPath, text: text.replace(endOfRemotes, systemRemote).replace(MEMORY_RESOLVER, resolverLines(join(siteDir, 'jwt')).join('\n')) };
}
