import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import type { KV } from '@nats-io/kv';
import { lazy } from '../../core/system/interop.js';
import { refused } from '../../core/system/errors.js';
import { nkeySeed } from '../../core/declaration/nkey.js';
import { openTrustRecord, selfSignedProblem, stepProblem, retiredKeys, type OpenedRoot, type TrustRecord, type TrustRoot } from '../../core/declaration/trust-root.js';
import { openTrustBucket, readTrustVersions } from '../../link/trust-bucket.js';
import { TRUST_BUCKET, trustKey } from '../../link/wire.js';
import { stringFlag, type CommandContext } from '../../cli/context.js';
import { MESH_DIR_ENV } from './mesh-defaults.js';

/** Where a mesh directory keeps the trust root's versions (one file a version) and the recovery keys. */
export const TRUST_LAYOUT = {
  dir: 'trust',
  version: (n: number) => `trust/${n}.json`,
  recoveryDir: 'recovery',
  recoveryKey: (i: number) => `recovery/recovery-${i}.nk`,
  recoveryWords: 'recovery/MOVE-THESE-KEYS-OFF-THIS-MACHINE.txt',
  /** A control key a rotation made the default: kept in the mesh directory like the first. */
  controlKey: (version: number) => `keys/operator-v${version}.nk`,
} as const;

/** The trust root as the mesh holds it: every version, checked from the first, and each record. */
export interface MeshTrust {
  roots: TrustRoot[];
  records: TrustRecord[];
}

export const newestOf = (trust: MeshTrust) => trust.roots[trust.roots.length - 1]!;

/** The mesh directory a command was given (`--mesh`, MESH_DIR), when it was. */
export function meshDirOf(ctx: CommandContext, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dir = stringFlag(ctx.flags, 'mesh') ?? (env[MESH_DIR_ENV] || undefined);
  return dir === undefined ? undefined : resolve(dir);
}

/** The versions a mesh directory holds, in order from 1, up to the first missing. */
export function readLocalTrust(dir: string): TrustRecord[] {
  if (!existsSync(join(dir, TRUST_LAYOUT.dir))) return [];
  const out: TrustRecord[] = [];
  for (let v = 1; existsSync(join(dir, TRUST_LAYOUT.version(v))); v++) out.push(JSON.parse(readFileSync(join(dir, TRUST_LAYOUT.version(v)), 'utf8')) as TrustRecord);
  return out;
}

export function writeLocalVersion(dir: string, version: number, record: TrustRecord): void {
  mkdirSync(join(dir, TRUST_LAYOUT.dir), { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, TRUST_LAYOUT.version(version)), `${JSON.stringify(record, null, 2)}\n`, { mode: 0o644 });
}

/** Checks a chain of records from version 1: the first on its own signatures, each next against the one before. */
export function checkChain(records: readonly TrustRecord[], where: string): MeshTrust {
  const roots: TrustRoot[] = [];
  for (const [i, record] of records.entries()) {
    const opened = openTrustRecord(record);
    if (!opened.ok) throw refused(`${where}: trust version ${i + 1}: ${opened.reason}`);
    if (opened.opened.root.version !== i + 1) throw refused(`${where}: the record under version ${i + 1} says version ${opened.opened.root.version}`);
    const problem = i === 0 ? selfSignedProblem(opened.opened) : stepProblem(roots[i - 1]!, opened.opened, retiredKeys(roots));
    if (problem) throw refused(`${where}: ${problem}`);
    roots.push(opened.opened.root);
  }
  return { roots, records: [...records] };
}

async function trustBucket(nc: NatsConnection): Promise<KV> {
  const { Kvm } = await lazy(import('@nats-io/kv'));
  return new Kvm(nc).open(TRUST_BUCKET);
}

/**
 * The mesh's trust root, with the mesh directory brought level with the bucket: versions the directory
 * has and the bucket lacks are published (a mesh just made by init publishes its version 1 this way),
 * versions the bucket has and the directory lacks are written to it. A directory and a bucket that
 * differ on a version are refused: two meshes met, or someone wrote the bucket by hand.
 */
export async function syncTrust(nc: NatsConnection, dir: string | undefined): Promise<MeshTrust | undefined> {
  const kv = await trustBucket(nc);
  const held = (await readTrustVersions(kv)).map((bytes) => JSON.parse(Buffer.from(bytes).toString('utf8')) as TrustRecord);
  const local = dir ? readLocalTrust(dir) : [];
  for (let i = 0; i < Math.min(held.length, local.length); i++) {
    if (JSON.stringify(held[i]) !== JSON.stringify(local[i])) throw refused(`trust version ${i + 1} in the mesh differs from ${join(dir!, TRUST_LAYOUT.version(i + 1))}: is this the mesh directory of these servers?`);
  }
  const records = held.length >= local.length ? held : local;
  if (records.length === 0) return undefined;
  const trust = checkChain(records, held.length >= local.length ? `the bucket ${TRUST_BUCKET}` : dir!);
  for (let i = held.length; i < local.length; i++) await publishVersion(nc, i + 1, local[i]!);
  if (dir) for (let i = local.length; i < held.length; i++) writeLocalVersion(dir, i + 1, held[i]!);
  return trust;
}

/** The mesh's trust root read only (the bucket, else the mesh directory's): for a command that writes nothing. */
export async function readMeshTrust(nc: NatsConnection, dir: string | undefined): Promise<MeshTrust | undefined> {
  const kv = await openTrustBucket(nc);
  const held = kv ? (await readTrustVersions(kv)).map((bytes) => JSON.parse(Buffer.from(bytes).toString('utf8')) as TrustRecord) : [];
  const local = dir ? readLocalTrust(dir) : [];
  const records = held.length >= local.length ? held : local;
  return records.length === 0 ? undefined : checkChain(records, held.length >= local.length ? `the bucket ${TRUST_BUCKET}` : dir!);
}

/**
 * Puts a version under its own key, only if no version is there: two rotations at once never both win.
 * A version already there with the very same bytes is no conflict: two commands bringing the bucket level
 * with one mesh directory at once (two bundles made side by side on a new mesh) publish the same record.
 */
export async function publishVersion(nc: NatsConnection, version: number, record: TrustRecord): Promise<void> {
  const kv = await trustBucket(nc);
  const bytes = JSON.stringify(record);
  try {
    await kv.create(trustKey(version), bytes);
  } catch (err) {
    const there = await kv.get(trustKey(version));
    if (there?.operation === 'PUT' && there.string() === bytes) return;
    throw refused(`trust version ${version} could not be published: ${(err as Error).message} (another rotation made it first? meshctl trust show)`);
  }
}

/** A seed file's public key, or a refusal naming the file. */
export function publicKeyOfSeed(path: string, seed: string): string {
  const pair = nkeySeed(seed, 'operator');
  if (typeof pair === 'string') throw refused(`${path} is ${pair}`);
  return pair.publicKey;
}

/**
 * Refuses to sign with a key the mesh's trust root does not hold: hosts would refuse what it signs.
 * A key a rotation retired is named with the version that retired it.
 */
export function requireControlKey(trust: MeshTrust | undefined, keyFile: string, seed: string): void {
  if (!trust) return;
  const key = publicKeyOfSeed(keyFile, seed);
  const newest = newestOf(trust);
  if (newest.control.keys.includes(key)) return;
  const retired = retiredKeys(trust.roots).get(key);
  const why = retired !== undefined ? `it was retired at trust version ${retired}` : newest.recovery.keys.includes(key) ? 'it is a recovery key (recovery keys sign trust roots, never declarations)' : `it is not a control key of trust version ${newest.version}`;
  throw refused(`${keyFile} (${key}) may not sign declarations: ${why}; every host would refuse it. Nothing was sent`, [`the control keys of trust version ${newest.version}: ${newest.control.keys.join(', ')}`]);
}

/** The record opened, for a command that reads it again. */
export function opened(record: TrustRecord): OpenedRoot {
  const r = openTrustRecord(record);
  if (!r.ok) throw refused(`a trust record: ${r.reason}`);
  return r.opened;
}

/**
 * The mesh's trust root for a command about to sign with this key: refused when the key is not a control
 * key of the newest version (hosts would refuse what it signs). Above a threshold of 1 the command proposes.
 */
export async function trustForSigning(nc: NatsConnection, ctx: CommandContext, keyFile: string, seed: string): Promise<MeshTrust | undefined> {
  const trust = await syncTrust(nc, meshDirOf(ctx));
  requireControlKey(trust, keyFile, seed);
  return trust;
}

/** More than one signature is needed: what is signed is proposed, and `meshctl approve` delivers it. */
export const needsApproval = (trust: MeshTrust | undefined): trust is MeshTrust => trust !== undefined && newestOf(trust).control.threshold > 1;
