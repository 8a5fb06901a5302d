import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { newNkeySeed, nkeySeed } from '../../src/core/declaration/nkey.js';
import { digestProblem, parseSums, sha256Hex, signatureProblem, signSums, sumsText, SIGNATURE_FILE, SUMS_FILE } from '../../src/core/declaration/release-sums.js';
import { rootProblem, TRUST_ROOT_KIND } from '../../src/core/declaration/trust-root.js';
import { releaseRefusal } from '../../src/host/release/verify-release.js';
import { scratch } from '../support/tree.js';

/**
 * A release's SHA256SUMS and its signature by release keys: written as `sha256sum` writes them, read
 * back, and a release refused when the signature is not the release keys' or a digest is not the one
 * listed, saying which. The folder checks read real files.
 */
const seed = () => newNkeySeed('operator');
const pub = (s: string) => (nkeySeed(s, 'operator') as { publicKey: string }).publicKey;
const [release1, release2, stranger] = [seed(), seed(), seed()];
const keys = (threshold = 1, list = [release1]) => ({ keys: list.map(pub), threshold });

describe('SHA256SUMS', () => {
  it('lists the files in name order as sha256sum prints them, and reads back', () => {
    const text = sumsText(new Map([['mesh-host', 'b'.repeat(64)], ['mesh-host.1', 'a'.repeat(64)]]));
    expect(text).toBe(`${'b'.repeat(64)}  mesh-host\n${'a'.repeat(64)}  mesh-host.1\n`);
    const parsed = parseSums(text);
    expect(parsed.ok && [...parsed.digests]).toEqual([['mesh-host', 'b'.repeat(64)], ['mesh-host.1', 'a'.repeat(64)]]);
    expect(parseSums(`${'c'.repeat(64)} *mesh-host\n`)).toMatchObject({ ok: true });
  });

  it('names the line that is not a sum, and a file named twice', () => {
    expect(parseSums(`${'a'.repeat(64)}  x\nnot a sum\n`)).toEqual({ ok: false, problem: `${SUMS_FILE} line 2 is not '<sha256>  <file>'` });
    expect(parseSums(`${'a'.repeat(64)}  x\n${'b'.repeat(64)}  x\n`)).toEqual({ ok: false, problem: `${SUMS_FILE} names x twice` });
  });

  it('a digest that differs, or a file not listed, is named', () => {
    const sums = new Map([['mesh-host', 'a'.repeat(64)]]);
    expect(digestProblem(sums, new Map([['mesh-host', 'a'.repeat(64)]]))).toBeUndefined();
    expect(digestProblem(sums, new Map([['mesh-host', 'b'.repeat(64)]]))).toMatchObject({ which: 'digest', problem: expect.stringContaining('the digest of mesh-host does not match') });
    expect(digestProblem(sums, new Map([['meshctl', 'a'.repeat(64)]]))).toMatchObject({ which: 'missing', problem: `${SUMS_FILE} does not list meshctl` });
  });
});

describe('the signature over SHA256SUMS', () => {
  const sums = Buffer.from(sumsText(new Map([['mesh-host', sha256Hex(Buffer.from('the executable'))]])));

  it('verifies by the release keys, up to their threshold', () => {
    expect(signatureProblem(sums, signSums(sums, [release1]), keys(), 2)).toBeUndefined();
    expect(signatureProblem(sums, signSums(sums, [release1, release1]), keys(2, [release1, release2]), 2)).toMatchObject({ which: 'signature', problem: expect.stringContaining('1 valid signature(s)') });
    expect(signatureProblem(sums, signSums(sums, [release1, release2]), keys(2, [release1, release2]), 2)).toBeUndefined();
  });

  it('is refused when another key signed, or the sums were changed after signing', () => {
    expect(signatureProblem(sums, signSums(sums, [stranger]), keys(), 2)).toEqual({
      which: 'signature',
      problem: expect.stringContaining(`it is signed by ${pub(stranger)}, not a release key of trust version 2`),
    });
    const changed = Buffer.from(sums.toString().replace(/^./, (c) => (c === '0' ? '1' : '0')));
    expect(signatureProblem(changed, signSums(sums, [release1]), keys(), 2)).toMatchObject({ which: 'signature', problem: expect.stringContaining('0 valid signature(s)') });
    expect(signatureProblem(sums, 'not json', keys(), 2)).toMatchObject({ which: 'signature', problem: expect.stringContaining(`${SIGNATURE_FILE} is not JSON`) });
  });
});

describe('a release folder checked', () => {
  const folder = (executable: string, sign: string[], listed = executable) => {
    const dir = scratch('mesh-host-release-sums-');
    writeFileSync(join(dir.dir, 'mesh-host'), executable);
    const sums = sumsText(new Map([['mesh-host', sha256Hex(Buffer.from(listed))]]));
    writeFileSync(join(dir.dir, SUMS_FILE), sums);
    if (sign.length) writeFileSync(join(dir.dir, SIGNATURE_FILE), signSums(Buffer.from(sums), sign));
    return dir;
  };
  const check = async (dir: ReturnType<typeof scratch>) => {
    try {
      return await releaseRefusal(dir.dir, ['mesh-host'], { keys: keys(), trustVersion: 3 });
    } finally {
      dir.cleanup();
    }
  };

  it('passes when signed by a release key and the executable is the one listed', async () => {
    expect(await check(folder('v1', [release1]))).toBeUndefined();
  });

  it('refuses a changed executable (digest), a signature by another key (signature), no signature (missing)', async () => {
    expect(await check(folder('v1 changed', [release1], 'v1'))).toMatchObject({ which: 'digest', problem: expect.stringMatching(/^the digest of mesh-host does not match SHA256SUMS/) });
    expect(await check(folder('v1', [stranger]))).toMatchObject({ which: 'signature' });
    expect(await check(folder('v1', []))).toMatchObject({ which: 'missing', problem: expect.stringContaining(`${SIGNATURE_FILE} does not exist: trust version 3 pins release keys`) });
  });
});

describe('the release keys of the trust root', () => {
  const root = (release?: object) => ({ kind: TRUST_ROOT_KIND, version: 1, control: keys(1, [seed()]), recovery: keys(1, [release2]), ...(release ? { release } : {}) });

  it('are optional, and checked as the other key sets are', () => {
    expect(rootProblem(root())).toBeUndefined();
    expect(rootProblem(root(keys()))).toBeUndefined();
    expect(rootProblem(root({ keys: [pub(release1)], threshold: 2 }))).toMatch(/^\/release/);
    expect(rootProblem(root(keys(1, [release2])))).toMatch(/is both a release key and a recovery key/);
  });
});
