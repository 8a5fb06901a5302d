import { decodeCanonicalBase64 } from '../vocabulary/base64.js';
import { signBytes, type Signature, type SignerRule } from './envelope.js';
import { operatorKey, verifyEd25519 } from './nkey.js';

/**
 * The mesh's trust root: which keys sign declarations (the control keys and how many of them must),
 * and which keys may replace them when they are lost or stolen (the recovery keys and their threshold).
 * Versioned: version N+1 is followed only when signed by a threshold of version N's control keys (or of
 * its recovery keys) and by a threshold of its own control keys, as The Update Framework's root is.
 */
export interface TrustRoot {
  kind: typeof TRUST_ROOT_KIND;
  version: number;
  control: KeySet;
  recovery: KeySet;
  /**
   * The keys whose signatures a release of mesh-host must carry (over its SHA256SUMS) for a host to
   * install it or update itself to it. Absent: releases are taken on their digest alone.
   */
  release?: KeySet;
}

export interface KeySet {
  keys: string[];
  threshold: number;
}

/** The record as the mesh holds it: the root's canonical JSON (base64) and its signatures over those bytes. */
export interface TrustRecord {
  root: string;
  signatures: Signature[];
}

export const TRUST_ROOT_KIND = 'mesh-trust-root';

/** A record read and checked in itself: its root, its bytes, and the distinct keys whose signatures verify. */
export interface OpenedRoot {
  root: TrustRoot;
  record: TrustRecord;
  /** The payload bytes the signatures are over. */
  bytes: Buffer;
  signers: Set<string>;
}

export type RootResult = { ok: true; opened: OpenedRoot } | { ok: false; reason: string };

const exactly = (value: unknown, fields: string[], where: string): string | undefined => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return `${where}: an object {${fields.join(', ')}}`;
  for (const key of Object.keys(value)) if (!fields.includes(key)) return `${where}/${key}: unknown field; the whole record is refused`;
  for (const key of fields) if (!(key in value)) return `${where}/${key}: missing`;
  return undefined;
};

function keySetProblem(value: unknown, where: string): string | undefined {
  const shape = exactly(value, ['keys', 'threshold'], where);
  if (shape) return shape;
  const set = value as KeySet;
  if (!Array.isArray(set.keys) || set.keys.length === 0) return `${where}/keys: a list of at least one operator public key (O…)`;
  for (const [i, key] of set.keys.entries()) {
    const parsed = typeof key === 'string' ? operatorKey(key) : 'not a string';
    if (typeof parsed === 'string') return `${where}/keys/${i}: ${parsed}`;
  }
  if (new Set(set.keys).size !== set.keys.length) return `${where}/keys: a key appears twice`;
  if (!Number.isInteger(set.threshold) || set.threshold < 1 || set.threshold > set.keys.length) return `${where}/threshold: a whole number from 1 to the number of keys (${set.keys.length})`;
  return undefined;
}

/** The root's own problem, if any: every field known, keys valid and distinct, thresholds reachable. */
export function rootProblem(value: unknown): string | undefined {
  const hasRelease = typeof value === 'object' && value !== null && 'release' in value;
  const shape = exactly(value, ['kind', 'version', 'control', 'recovery', ...(hasRelease ? ['release'] : [])], '');
  if (shape) return shape;
  const root = value as TrustRoot;
  if (root.kind !== TRUST_ROOT_KIND) return `/kind: ${JSON.stringify(root.kind)}, not ${JSON.stringify(TRUST_ROOT_KIND)}`;
  if (!Number.isInteger(root.version) || root.version < 1) return '/version: a whole number, at least 1';
  const sets = keySetProblem(root.control, '/control') ?? keySetProblem(root.recovery, '/recovery');
  if (sets) return sets;
  const both = root.control.keys.find((k) => root.recovery.keys.includes(k));
  if (both) return `${both} is both a control key and a recovery key: a recovery key must stay apart to replace a lost one`;
  if (root.release !== undefined) {
    const release = keySetProblem(root.release, '/release');
    if (release) return release;
    const recoveryToo = root.release.keys.find((k) => root.recovery.keys.includes(k));
    if (recoveryToo) return `${recoveryToo} is both a release key and a recovery key: a recovery key must stay apart to replace a lost one`;
  }
  return undefined;
}

/** Reads a record: every field known (one unknown field refuses it whole), the root valid, each signature checked once per key. */
export function openTrustRecord(value: unknown): RootResult {
  const shape = exactly(value, ['root', 'signatures'], '');
  if (shape) return { ok: false, reason: shape };
  const record = value as TrustRecord;
  if (typeof record.root !== 'string') return { ok: false, reason: '/root: base64 of the root\'s JSON' };
  if (!Array.isArray(record.signatures)) return { ok: false, reason: '/signatures: a list of {key, signature}' };
  for (const [i, s] of record.signatures.entries()) {
    const problem = exactly(s, ['key', 'signature'], `/signatures/${i}`);
    if (problem) return { ok: false, reason: problem };
    if (typeof s.key !== 'string' || typeof s.signature !== 'string') return { ok: false, reason: `/signatures/${i}: key and signature are strings` };
  }
  const bytes = decodeCanonicalBase64(record.root);
  if (bytes === undefined) return { ok: false, reason: '/root: not base64 (canonical, padded)' };
  let root: unknown;
  try {
    root = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    return { ok: false, reason: `/root: not JSON: ${(err as Error).message}` };
  }
  const problem = rootProblem(root);
  if (problem) return { ok: false, reason: `/root${problem}` };
  // A set: a key whose signature appears twice counts once.
  const signers = new Set<string>();
  for (const s of record.signatures) {
    if (signers.has(s.key)) continue;
    const key = operatorKey(s.key);
    const signature = decodeCanonicalBase64(s.signature);
    if (typeof key !== 'string' && signature !== undefined && verifyEd25519(key, bytes, signature)) signers.add(s.key);
  }
  return { ok: true, opened: { root: root as TrustRoot, record, bytes, signers } };
}

const count = (signers: Set<string>, set: KeySet) => set.keys.filter((k) => signers.has(k)).length;
const meets = (signers: Set<string>, set: KeySet) => count(signers, set) >= set.threshold;

/** A version taken on its own word (genesis, a bundle): signed by the threshold of its own control keys. */
export function selfSignedProblem(opened: OpenedRoot): string | undefined {
  const { root, signers } = opened;
  if (meets(signers, root.control)) return undefined;
  return `trust version ${root.version} carries ${count(signers, root.control)} valid signature(s) of its own control keys; it needs ${root.control.threshold}`;
}

/**
 * Whether `next` may follow `held`: exactly one version more, signed by the threshold of the held
 * version's control keys or of its recovery keys, and by the threshold of its own control keys.
 * `retiredAt` names, for a refusal, the version that retired a key that signed.
 */
export function stepProblem(held: TrustRoot, next: OpenedRoot, retiredAt: ReadonlyMap<string, number> = new Map()): string | undefined {
  const { root, signers } = next;
  if (root.version <= held.version) return `trust version ${root.version} is not newer than the version held (${held.version}): refused`;
  if (root.version !== held.version + 1) return `trust version ${root.version} skips version ${held.version + 1} (the host holds ${held.version}): versions are followed one at a time`;
  if (!meets(signers, held.control) && !meets(signers, held.recovery)) {
    const retired = [...signers].filter((k) => retiredAt.has(k));
    const only = retired.length > 0 && count(signers, held.control) === 0 && count(signers, held.recovery) === 0 ? `; it is signed only by keys retired before (${retired.map((k) => `${k} at trust version ${retiredAt.get(k)}`).join(', ')})` : '';
    return `trust version ${root.version} is not signed by ${held.control.threshold} of the control keys of version ${held.version} (it has ${count(signers, held.control)}) nor by ${held.recovery.threshold} of its recovery keys (it has ${count(signers, held.recovery)})${only}`;
  }
  if (!meets(signers, root.control)) return `trust version ${root.version} is not signed by ${root.control.threshold} of its own control keys (it has ${count(signers, root.control)})`;
  return undefined;
}

/** The keys of each version that the next one dropped, with the version that dropped them (a key taken back is no longer retired). */
export function retiredKeys(chain: readonly TrustRoot[]): Map<string, number> {
  const retired = new Map<string, number>();
  for (let i = 1; i < chain.length; i++) {
    for (const key of chain[i - 1]!.control.keys) if (!chain[i]!.control.keys.includes(key)) retired.set(key, chain[i]!.version);
    for (const key of chain[i]!.control.keys) retired.delete(key);
  }
  return retired;
}

/** What a declaration must be signed by under the newest version of a chain. */
export function signerRule(chain: readonly TrustRoot[]): SignerRule {
  const newest = chain[chain.length - 1]!;
  // The control keys decoded here, once for the rule: a delivery looks its signer up, it does not decode it.
  const decoded = new Map(newest.control.keys.map((key) => [key, operatorKey(key)] as const));
  return { version: newest.version, keys: newest.control.keys, decoded, threshold: newest.control.threshold, retiredAt: retiredKeys(chain), recovery: newest.recovery.keys };
}

/**
 * A host enrolled before trust roots pinned one key: its version 0, which version 1 must be signed by.
 * It has no recovery keys (an empty set no signature can meet).
 */
export function pinnedKeyRoot(publicKey: string): TrustRoot {
  return { kind: TRUST_ROOT_KIND, version: 0, control: { keys: [publicKey], threshold: 1 }, recovery: { keys: [], threshold: 1 } };
}

/** A root's canonical bytes: its fields in one order, so two control planes make the same bytes. */
export function rootBytes(root: TrustRoot): Buffer {
  const set = (s: KeySet) => ({ keys: s.keys, threshold: s.threshold });
  return Buffer.from(JSON.stringify({ kind: root.kind, version: root.version, control: set(root.control), recovery: set(root.recovery), ...(root.release ? { release: set(root.release) } : {}) }));
}

/** A record of a root signed by each seed given (a seed given twice signs once). */
export function signRoot(root: TrustRoot, seeds: string[]): TrustRecord {
  const bytes = rootBytes(root);
  const signatures = new Map<string, Signature>();
  for (const seed of seeds) {
    const s = signBytes(bytes, seed);
    signatures.set(s.key, s);
  }
  return { root: bytes.toString('base64'), signatures: [...signatures.values()] };
}

/** A record with more signatures added (another holder's approval of a version). */
export function addSignatures(record: TrustRecord, seeds: string[]): TrustRecord {
  const bytes = decodeCanonicalBase64(record.root)!;
  const signatures = new Map(record.signatures.map((s) => [s.key, s]));
  for (const seed of seeds) {
    const s = signBytes(bytes, seed);
    signatures.set(s.key, s);
  }
  return { root: record.root, signatures: [...signatures.values()] };
}
