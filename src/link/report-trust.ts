import type { KeyObject } from 'node:crypto';
import type { SealingClaim } from './sealing-trust.js';
import { nkeySeed, publicNkey, signEd25519, verifyEd25519, verifyEd25519Async } from '../core/declaration/nkey.js';

/** The headers a host's report is published with: its node key (N…), and Ed25519 over the report's bytes. */
export const REPORT_KEY_HEADER = 'Mesh-Node-Key';
export const REPORT_SIGNATURE_HEADER = 'Mesh-Signature';

/** What signs a host's reports: its own node key, made at genesis (or carried by the bundle). */
export interface ReportSigner {
  publicKey: string;
  /** The headers for these exact bytes. */
  headersFor(bytes: Uint8Array): Record<string, string>;
  /** The host's curve key, signed by this key: every heartbeat carries it too (link/sealing-trust.ts). */
  sealing?: SealingClaim;
}

/** A signer from a node seed (SN…); a reason when the text is not one. */
export function reportSigner(seed: string): ReportSigner | string {
  const pair = nkeySeed(seed, 'node');
  if (typeof pair === 'string') return pair;
  return {
    publicKey: pair.publicKey,
    headersFor: (bytes) => ({ [REPORT_KEY_HEADER]: pair.publicKey, [REPORT_SIGNATURE_HEADER]: signEd25519(pair.privateKey, bytes).toString('base64') }),
  };
}

/**
 * What the control side may believe of a report:
 * - `verified`: signed by the key its node enrolled;
 * - `not-enrolled`: its own signature holds, but its node has enrolled no key (yet) to hold it to;
 * - `unsigned`: no signature at all;
 * - `bad-signature`: the signature does not hold over these bytes;
 * - `unknown-key`: signed by a key its node never enrolled;
 * - `wrong-node`: signed, but the report names another node than the subject it came on;
 * - `retired-key`: signed by a key its node retired (`mesh-host rekey`), in a report made after it did.
 * Only `verified` is trusted.
 */
export type ReportTrust =
  | { verdict: 'verified'; key: string }
  | { verdict: 'not-enrolled'; key: string }
  | { verdict: 'unsigned' }
  | { verdict: 'bad-signature'; key: string; reason: string }
  | { verdict: 'unknown-key'; key: string; enrolled: string }
  | { verdict: 'wrong-node'; key: string; named: string | null }
  | { verdict: 'retired-key'; key: string; retiredAt: string; afterReport: number };

export interface SignedReport {
  /** The node of the subject the report came on (`mesh.report.<node>`). */
  node: string;
  bytes: Uint8Array;
  /** The values of the report headers, when present. */
  key?: string | undefined;
  signature?: string | undefined;
  /** The statement of a new node key the report carries (`Mesh-Rekey`), when it carries one. */
  rekey?: string | undefined;
}

/** Checks one report against the key its node enrolled (none: only against the key it names). */
export function verifyReport(report: SignedReport, enrolledKey: string | undefined): ReportTrust {
  const asked = signatureToCheck(report);
  const known = knownBefore(report, enrolledKey, asked);
  if (known) return known;
  if ('verdict' in asked) return asked;
  return trustOf(report, enrolledKey, verifyEd25519(asked.key, report.bytes, asked.signature));
}

/** The verdict of a report once its node's enrolled key is known (undefined: none enrolled). */
export type PendingTrust = (enrolledKey: string | undefined) => Promise<ReportTrust>;

/**
 * The same check, begun now: the signature against the key the report names is checked on libuv's
 * threads at once, before its node's enrolment is known, so a reader of a whole fleet's reports has the
 * checks run on the other core while it goes on reading. The verdict, once the enrolled key is given,
 * is verifyReport's for the same report and key.
 */
export function beginReportCheck(report: SignedReport): PendingTrust {
  const asked = signatureToCheck(report);
  const holds = 'verdict' in asked ? undefined : verifyEd25519Async(asked.key, report.bytes, asked.signature);
  // Not awaited when the enrolled key is another one (the verdict needs no signature then).
  holds?.catch(() => {});
  return async (enrolledKey) => knownBefore(report, enrolledKey, asked) ?? trustOf(report, enrolledKey, await holds!);
}

interface Asked {
  key: KeyObject;
  signature: Buffer;
}

/** The key the report names and its signature, or the verdict known without the enrolment. */
function signatureToCheck(report: SignedReport): ReportTrust | Asked {
  if (!report.signature || !report.key) return { verdict: 'unsigned' };
  const key = publicNkey(report.key, 'node');
  if (typeof key === 'string') return { verdict: 'bad-signature', key: report.key, reason: key };
  return { key, signature: Buffer.from(report.signature, 'base64') };
}

/** The verdict that needs no signature checked: unsigned, signed by a key other than the enrolled one, or a key that is not one. */
function knownBefore(report: SignedReport, enrolledKey: string | undefined, asked: ReportTrust | Asked): ReportTrust | undefined {
  if ('verdict' in asked && asked.verdict === 'unsigned') return asked;
  if (enrolledKey !== undefined && report.key !== enrolledKey) return { verdict: 'unknown-key', key: report.key!, enrolled: enrolledKey };
  return 'verdict' in asked ? asked : undefined;
}

function trustOf(report: SignedReport, enrolledKey: string | undefined, holds: boolean): ReportTrust {
  if (!holds) return { verdict: 'bad-signature', key: report.key!, reason: 'the signature does not hold over the report bytes' };
  const named = namedNode(report.bytes);
  if (named !== report.node) return { verdict: 'wrong-node', key: report.key!, named };
  return enrolledKey === undefined ? { verdict: 'not-enrolled', key: report.key! } : { verdict: 'verified', key: report.key! };
}

function namedNode(bytes: Uint8Array): string | null {
  try {
    const value = JSON.parse(Buffer.from(bytes).toString('utf8')) as { node?: unknown };
    return typeof value.node === 'string' ? value.node : null;
  } catch {
    return null;
  }
}
