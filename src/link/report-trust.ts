import { nkeySeed, publicNkey, signEd25519, verifyEd25519 } from '../declaration/nkey.js';

/** The headers a host's report is published with: its node key (N…), and Ed25519 over the report's bytes. */
export const REPORT_KEY_HEADER = 'Mesh-Node-Key';
export const REPORT_SIGNATURE_HEADER = 'Mesh-Signature';

/** What signs a host's reports: its own node key, made at genesis (or carried by the bundle). */
export interface ReportSigner {
  publicKey: string;
  /** The headers for these exact bytes. */
  headersFor(bytes: Uint8Array): Record<string, string>;
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
 * - `wrong-node`: signed, but the report names another node than the subject it came on.
 * Only `verified` is trusted.
 */
export type ReportTrust =
  | { verdict: 'verified'; key: string }
  | { verdict: 'not-enrolled'; key: string }
  | { verdict: 'unsigned' }
  | { verdict: 'bad-signature'; key: string; reason: string }
  | { verdict: 'unknown-key'; key: string; enrolled: string }
  | { verdict: 'wrong-node'; key: string; named: string | null };

export interface SignedReport {
  /** The node of the subject the report came on (`mesh.report.<node>`). */
  node: string;
  bytes: Uint8Array;
  /** The values of the report headers, when present. */
  key?: string | undefined;
  signature?: string | undefined;
}

/** Checks one report against the key its node enrolled (none: only against the key it names). */
export function verifyReport(report: SignedReport, enrolledKey: string | undefined): ReportTrust {
  if (!report.signature || !report.key) return { verdict: 'unsigned' };
  if (enrolledKey !== undefined && report.key !== enrolledKey) return { verdict: 'unknown-key', key: report.key, enrolled: enrolledKey };
  const key = publicNkey(report.key, 'node');
  if (typeof key === 'string') return { verdict: 'bad-signature', key: report.key, reason: key };
  if (!verifyEd25519(key, report.bytes, Buffer.from(report.signature, 'base64'))) {
    return { verdict: 'bad-signature', key: report.key, reason: 'the signature does not hold over the report bytes' };
  }
  const named = namedNode(report.bytes);
  if (named !== report.node) return { verdict: 'wrong-node', key: report.key, named };
  return enrolledKey === undefined ? { verdict: 'not-enrolled', key: report.key } : { verdict: 'verified', key: report.key };
}

function namedNode(bytes: Uint8Array): string | null {
  try {
    const value = JSON.parse(Buffer.from(bytes).toString('utf8')) as { node?: unknown };
    return typeof value.node === 'string' ? value.node : null;
  } catch {
    return null;
  }
}
