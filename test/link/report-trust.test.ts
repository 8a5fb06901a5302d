import { describe, expect, it } from 'vitest';
import { createServer, fromSeed } from '@nats-io/nkeys';
import { beginReportCheck, REPORT_KEY_HEADER, REPORT_SIGNATURE_HEADER, reportSigner, verifyReport, type ReportSigner } from '../../src/link/report-trust.js';
import { newNkeySeed, nkeySeed, publicNkey, verifyEd25519 } from '../../src/core/declaration/nkey.js';

const bytesOf = (value: unknown) => Buffer.from(JSON.stringify(value));
const signer = (seed = newNkeySeed('node')): ReportSigner => reportSigner(seed) as ReportSigner;
const signed = (s: ReportSigner, node: string, bytes: Uint8Array) => {
  const headers = s.headersFor(bytes);
  return { node, bytes, key: headers[REPORT_KEY_HEADER], signature: headers[REPORT_SIGNATURE_HEADER] };
};

describe('report signatures', () => {
  it('node keys made here are nkeys: the nkeys library reads the seed and checks the signature', () => {
    const seed = newNkeySeed('node');
    expect(seed).toMatch(/^SN[A-Z2-7]+$/);
    const pair = fromSeed(new TextEncoder().encode(seed));
    const s = signer(seed);
    expect(s.publicKey).toBe(pair.getPublicKey());
    const bytes = bytesOf({ node: 'a', sequence: 1 });
    expect(pair.verify(bytes, Buffer.from(s.headersFor(bytes)[REPORT_SIGNATURE_HEADER]!, 'base64'))).toBe(true);
    // And a key made by the library signs as this code expects.
    const theirs = createServer();
    expect((nkeySeed(new TextDecoder().decode(theirs.getSeed()), 'node') as { publicKey: string }).publicKey).toBe(theirs.getPublicKey());
  });

  it("the nkeys library's keys decode to the key that checks their signatures, and a key with one character changed fails its checksum", () => {
    for (let i = 0; i < 40; i++) {
      const theirs = createServer();
      const text = theirs.getPublicKey();
      const key = publicNkey(text, 'node');
      if (typeof key === 'string') throw new Error(`${text}: ${key}`);
      const bytes = bytesOf({ i });
      expect(verifyEd25519(key, bytes, theirs.sign(bytes))).toBe(true);
      // Any character but the first (the kind's letter), changed to another of the alphabet.
      const at = 1 + ((i * 7) % (text.length - 1));
      const changed = text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1);
      expect(publicNkey(changed, 'node')).toMatch(/fails its checksum|is not a node public key|is not an nkey/);
    }
    expect(publicNkey('Nnot-base32!', 'node')).toMatch(/is not an nkey/);
  });

  it('a report signed by the enrolled key over these bytes, naming its node, is verified; without an enrolment it is only not-enrolled', () => {
    const s = signer();
    const report = signed(s, 'a', bytesOf({ node: 'a', sequence: 1 }));
    expect(verifyReport(report, s.publicKey)).toEqual({ verdict: 'verified', key: s.publicKey });
    expect(verifyReport(report, undefined)).toEqual({ verdict: 'not-enrolled', key: s.publicKey });
  });

  it('flags altered bytes, another key, another node, no signature, and a key that is not a node key', () => {
    const s = signer();
    const other = signer();
    const report = signed(s, 'a', bytesOf({ node: 'a', sequence: 1 }));
    expect(verifyReport({ ...report, bytes: bytesOf({ node: 'a', sequence: 2 }) }, s.publicKey).verdict).toBe('bad-signature');
    expect(verifyReport({ ...report, signature: Buffer.alloc(64).toString('base64') }, s.publicKey).verdict).toBe('bad-signature');
    expect(verifyReport(signed(other, 'a', report.bytes), s.publicKey)).toEqual({ verdict: 'unknown-key', key: other.publicKey, enrolled: s.publicKey });
    expect(verifyReport(signed(s, 'b', report.bytes), s.publicKey)).toEqual({ verdict: 'wrong-node', key: s.publicKey, named: 'a' });
    expect(verifyReport({ node: 'a', bytes: report.bytes }, s.publicKey)).toEqual({ verdict: 'unsigned' });
    const operator = 'OCXD3ADBGSXEZ7UEFJE7DZRFPEBGT4SIAT44PKMEI6ZFNQILLQVCDRIP';
    expect(verifyReport({ ...report, key: operator }, undefined)).toMatchObject({ verdict: 'bad-signature', reason: expect.stringMatching(/not a node public key/) });
  });

  it('a check begun before the enrolled key is known (on libuv\'s threads) gives the same verdict as the check made with it, for every kind of report', async () => {
    const s = signer();
    const other = signer();
    const report = signed(s, 'a', bytesOf({ node: 'a', sequence: 1 }));
    const reports = {
      verified: report,
      forged: { ...report, bytes: bytesOf({ node: 'a', sequence: 2 }) },
      zeroes: { ...report, signature: Buffer.alloc(64).toString('base64') },
      short: { ...report, signature: Buffer.alloc(10).toString('base64') },
      anotherKey: signed(other, 'a', report.bytes),
      anotherNode: signed(s, 'b', report.bytes),
      unsigned: { node: 'a', bytes: report.bytes },
      notANodeKey: { ...report, key: 'OCXD3ADBGSXEZ7UEFJE7DZRFPEBGT4SIAT44PKMEI6ZFNQILLQVCDRIP' },
    };
    const verdicts = new Set<string>();
    for (const [name, r] of Object.entries(reports)) {
      for (const enrolled of [s.publicKey, other.publicKey, undefined]) {
        const now = verifyReport(r, enrolled);
        verdicts.add(now.verdict);
        expect(await beginReportCheck(r)(enrolled), `${name}, enrolled ${enrolled}`).toEqual(now);
      }
    }
    expect([...verdicts].sort()).toEqual(['bad-signature', 'not-enrolled', 'unknown-key', 'unsigned', 'verified', 'wrong-node']);
  });

  it('a seed of another kind is not a signer', () => {
    expect(reportSigner(newNkeySeed('operator'))).toMatch(/not a node seed/);
    expect(reportSigner('SNnonsense')).toMatch(/not an nkey seed/);
  });
});
