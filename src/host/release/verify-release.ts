import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { digestProblem, parseSums, signatureProblem, SIGNATURE_FILE, SUMS_FILE, type ReleaseRefusal } from '../../core/declaration/release-sums.js';
import type { KeySet, TrustRoot } from '../../core/declaration/trust-root.js';

/** The release keys a host checks releases against, with the trust version that pins them. */
export interface ReleaseKeys {
  keys: KeySet;
  trustVersion: number;
}

/** The release keys a trust root pins, or none when it pins none (releases are then taken on their digest in the declaration). */
export function releaseKeysOf(root: TrustRoot | undefined): ReleaseKeys | undefined {
  return root?.release ? { keys: root.release, trustVersion: root.version } : undefined;
}

async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function readOrMissing(path: string, why: string): Promise<Buffer | ReleaseRefusal> {
  try {
    return await readFile(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { which: 'missing', problem: code === 'ENOENT' ? `${path} does not exist: ${why}` : `${path} cannot be read (${code})` };
  }
}

/**
 * Why the release in `dir` is refused, or undefined when it carries SHA256SUMS signed by the threshold
 * of the release keys and each of `files` (the executable, say) has the digest SHA256SUMS lists. The
 * signature is checked first: sums that are not signed say nothing.
 */
export async function releaseRefusal(dir: string, files: readonly string[], keys: ReleaseKeys): Promise<ReleaseRefusal | undefined> {
  const pinned = `trust version ${keys.trustVersion} pins release keys, so a release carries ${SUMS_FILE} and ${SIGNATURE_FILE}`;
  const sums = await readOrMissing(join(dir, SUMS_FILE), pinned);
  if (!Buffer.isBuffer(sums)) return sums;
  const signature = await readOrMissing(join(dir, SIGNATURE_FILE), pinned);
  if (!Buffer.isBuffer(signature)) return signature;
  const signed = signatureProblem(sums, signature.toString('utf8'), keys.keys, keys.trustVersion);
  if (signed) return signed;
  const parsed = parseSums(sums.toString('utf8'));
  if (!parsed.ok) return { which: 'digest', problem: parsed.problem };
  const actual = new Map<string, string>();
  for (const name of files) actual.set(name, await fileSha256(join(dir, name)));
  return digestProblem(parsed.digests, actual);
}
