import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connectLink } from '../../link/connect.js';
import { writeDurably } from '../../core/system/durable.js';
import { refused } from '../../core/system/errors.js';
import { lazy } from '../../core/system/interop.js';
import type { Logger } from '../../core/system/log.js';
import { reissueWithRevocations } from './account-claims.js';
import { pushAccountJwt, type PushResult } from './claims-push.js';
import { MESH_LAYOUT, type MeshDefaults } from './mesh-dir.js';
import type { KeyPair } from './nats-accounts.js';

/** How long the servers' answers to a push are awaited. */
export const PUSH_WAIT_MS = 5000;

/** A mesh whose servers run the full account resolver: what a push needs. */
export type ResolverMesh = MeshDefaults & { systemCreds: string; serverNames: string[] };

/**
 * The mesh, when its servers run NATS's full account resolver; refused, with the way over, when they
 * preload the accounts in memory (a mesh made before): a revocation could only reach them by hand.
 */
export function resolverMesh(dir: string, mesh: MeshDefaults, what: string): ResolverMesh {
  if (mesh.systemCreds === undefined || mesh.serverNames === undefined) {
    throw refused(`${what}: the servers of the mesh in ${dir} keep its accounts in memory (resolver: MEMORY, a mesh made before the full resolver), so a revocation cannot be pushed to them`, [
      `meshctl resolver-upgrade --mesh ${dir} moves them to the full resolver (it rewrites each server's configuration; restart each server after it), then run this again`,
    ]);
  }
  return mesh as ResolverMesh;
}

/** The servers that answer a push: the mesh's own, and the leaf node of each site made in the directory. */
export function expectedServers(dir: string, mesh: ResolverMesh): string[] {
  const sites = join(dir, 'sites');
  const leaves = existsSync(sites) ? readdirSync(sites).filter((site) => existsSync(join(sites, site, 'nats-server.conf'))).map((site) => `leaf-${site}`) : [];
  return [...mesh.serverNames, ...leaves];
}

/** A file of the mesh directory, trimmed, or a refusal naming it. */
export function meshDirFile(dir: string, rel: string): string {
  const path = join(dir, rel);
  try {
    return readFileSync(path, 'utf8').trim();
  } catch (err) {
    throw refused(`${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): is ${dir} a mesh directory made by meshctl init?`);
  }
}

async function operatorKey(dir: string): Promise<KeyPair> {
  const nkeys = await lazy(import('@nats-io/nkeys'));
  const seed = meshDirFile(dir, MESH_LAYOUT.operatorSeed);
  if (!seed.startsWith('SO')) throw refused(`${join(dir, MESH_LAYOUT.operatorSeed)} is not an operator seed (SO…)`);
  return nkeys.fromSeed(new TextEncoder().encode(seed));
}

/**
 * Revokes NATS users of the mesh's account: a new version of the account's JWT with them in its
 * revocations, signed by the operator, written to the mesh directory first (it is the truth: a push that
 * did not reach every server is made again from it) and then pushed to every server.
 */
export async function revokeUsers(dir: string, mesh: ResolverMesh, users: string[], log: Logger): Promise<{ revokedAt: number; push: PushResult }> {
  const operator = await operatorKey(dir);
  // Read, changed and written by one meshctl at a time: two revocations at once must not lose one.
  const revokedAt = await underAccountLock(dir, async () => {
    const { jwt, revokedAt: at } = await reissueWithRevocations({ operator, current: meshDirFile(dir, MESH_LAYOUT.accountJwt), users });
    writeDurably(join(dir, MESH_LAYOUT.accountJwt), Buffer.from(`${jwt}\n`), 0o644);
    return at;
  });
  log.debug({ users, revokedAt }, 'the account JWT with the revocations is written to the mesh directory');
  return { revokedAt, push: await pushAccount(dir, mesh, log) };
}

const LOCK_WAIT_MS = 30_000;

/**
 * Runs `fn` holding the mesh directory's account lock: a file made exclusively, naming this process. A
 * lock whose process is gone (a meshctl killed) is taken over; one held by a live process is waited
 * for, then refused, naming it.
 */
async function underAccountLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const path = join(dir, 'nats/account.lock');
  const started = Date.now();
  for (;;) {
    try {
      writeFileSync(path, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const text = readFileSync(path, 'utf8').trim();
      const holder = Number(text);
      // Empty: made this instant by another, its pid not written yet (or left so by a crash, long ago).
      const stale = text === '' ? Date.now() - statSync(path).mtimeMs > 5000 : !Number.isInteger(holder) || holder <= 0 || !alive(holder);
      if (stale) {
        rmSync(path, { force: true });
        continue;
      }
      if (Date.now() - started > LOCK_WAIT_MS) throw refused(`${path}: another meshctl (pid ${holder}) is changing the mesh's account; nothing was changed, try again once it is done`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(path, { force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Pushes the account's JWT, as the mesh directory holds it, to every server, as the system account's user. */
export async function pushAccount(dir: string, mesh: ResolverMesh, log: Logger): Promise<PushResult> {
  const nc = await connectLink({ servers: mesh.servers, name: 'meshctl (system account)', persistent: false, creds: mesh.systemCreds }, log);
  try {
    return await pushAccountJwt(nc, meshDirFile(dir, MESH_LAYOUT.accountJwt), expectedServers(dir, mesh), PUSH_WAIT_MS);
  } finally {
    await nc.close();
  }
}

/** The push's result in words: who took it, who refused it and who did not answer. */
export function describePush(push: PushResult): string[] {
  return [
    ...push.answers.map((a) => `  ${a.server.padEnd(16)} ${a.ok ? 'took it' : `refused it: ${a.message}`}`),
    ...push.silent.map((name) => `  ${name.padEnd(16)} did not answer within ${PUSH_WAIT_MS / 1000} s: once it is back, run 'meshctl account-push'`),
  ];
}

/** Whether every server expected took the push. */
export const pushComplete = (push: PushResult) => push.silent.length === 0 && push.answers.every((a) => a.ok);
