import { createHash } from 'node:crypto';
import { decodeCanonicalBase64 } from '../vocabulary/base64.js';
import { signBytes, type Signature } from './envelope.js';
import { operatorKey, verifyEd25519 } from './nkey.js';
import type { KeySet } from './trust-root.js';

/**
 * A release's signed digests: `SHA256SUMS` (the lines `sha256sum` writes: 64 hex digits, two spaces,
 * the file's name) and `SHA256SUMS.sig`, the signatures of release keys over exactly those bytes. The
 * release script writes both; the installer and the launcher check a release against them and the
 * release keys of the trust root the host holds.
 */
export const SUMS_FILE = 'SHA256SUMS';
export const SIGNATURE_FILE = 'SHA256SUMS.sig';

/** `SHA256SUMS.sig`: Ed25519 signatures by operator nkeys (O…), each over the bytes of SHA256SUMS. */
export interface ReleaseSignature {
  signatures: Signature[];
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** SHA256SUMS's text for these files (name → digest), in name order, as `sha256sum` prints them. */
export function sumsText(digests: ReadonlyMap<string, string>): string {
  return [...digests.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, hex]) => `${hex}  ${name}\n`)
    .join('');
}

/** The signature file's text: each seed's signature over the sums (a seed given twice signs once). */
export function signSums(sums: Uint8Array, seeds: readonly string[]): string {
  const signatures = new Map<string, Signature>();
  for (const seed of seeds) {
    const s = signBytes(sums, seed);
    signatures.set(s.key, s);
  }
  return `${JSON.stringify({ signatures: [...signatures.values()] } satisfies ReleaseSignature, null, 2)}\n`;
}

/** SHA256SUMS read back: name → digest; the first line that is not one is the problem. */
export function parseSums(text: string): { ok: true; digests: Map<string, string> } | { ok: false; problem: string } {
  const digests = new Map<string, string>();
  for (const [i, line] of text.split('\n').entries()) {
    if (line === '') continue;
    // `sha256sum` marks a file read in binary mode with '*' in place of the second space.
    const match = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
    if (!match) return { ok: false, problem: `${SUMS_FILE} line ${i + 1} is not '<sha256>  <file>'` };
    if (digests.has(match[2]!)) return { ok: false, problem: `${SUMS_FILE} names ${match[2]} twice` };
    digests.set(match[2]!, match[1]!);
  }
  return { ok: true, digests };
}

/** What a release check found wrong: its signature, a digest, or a file it needs that is not there. */
export type ReleaseRefusal = { which: 'signature' | 'digest' | 'missing'; problem: string };

/**
 * Whether the signature file carries valid signatures over `sums` by at least the threshold of
 * distinct release keys; the problem, naming the keys that signed, when it does not.
 */
export function signatureProblem(sums: Uint8Array, signatureText: string, release: KeySet, trustVersion: number): ReleaseRefusal | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(signatureText);
  } catch (err) {
    return { which: 'signature', problem: `${SIGNATURE_FILE} is not JSON: ${(err as Error).message}` };
  }
  const list = (parsed as Partial<ReleaseSignature> | null)?.signatures;
  if (!Array.isArray(list)) return { which: 'signature', problem: `${SIGNATURE_FILE}: {"signatures": [{key, signature}…]}` };
  const valid = new Set<string>();
  const others: string[] = [];
  for (const s of list as Partial<Signature>[]) {
    if (typeof s?.key !== 'string' || typeof s.signature !== 'string') return { which: 'signature', problem: `${SIGNATURE_FILE}: each signature is {key, signature}` };
    if (!release.keys.includes(s.key)) {
      others.push(s.key);
      continue;
    }
    const key = operatorKey(s.key);
    const bytes = decodeCanonicalBase64(s.signature);
    if (typeof key !== 'string' && bytes !== undefined && verifyEd25519(key, sums, bytes)) valid.add(s.key);
  }
  if (valid.size >= release.threshold) return undefined;
  const by = others.length ? `; it is signed by ${others.join(', ')}, not a release key of trust version ${trustVersion}` : '';
  return {
    which: 'signature',
    problem: `the signature over ${SUMS_FILE} does not verify: ${valid.size} valid signature(s) of the release keys of trust version ${trustVersion} (${release.keys.join(', ')}), ${release.threshold} needed${by}`,
  };
}

/** Whether each named file's digest is the one SHA256SUMS gives it. */
export function digestProblem(sums: Map<string, string>, files: ReadonlyMap<string, string>): ReleaseRefusal | undefined {
  for (const [name, actual] of files) {
    const listed = sums.get(name);
    if (listed === undefined) return { which: 'missing', problem: `${SUMS_FILE} does not list ${name}` };
    if (listed !== actual) return { which: 'digest', problem: `the digest of ${name} does not match ${SUMS_FILE}: the file's is ${actual}, ${SUMS_FILE} says ${listed}` };
  }
  return undefined;
}
