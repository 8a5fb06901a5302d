import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import nacl from 'tweetnacl';
import { createCurve, fromCurveSeed } from '@nats-io/nkeys';
import { CurveSender, newCurveSeed, sealingOf, type SealedValue } from '../../src/core/declaration/sealed.js';
import { validateDeclaration } from '../../src/core/declaration/validate.js';

/**
 * A sender written from docs/wire.md ("Sealed values") alone, as a control plane in another language
 * would: its own base32 and CRC-16/XMODEM, tweetnacl's crypto_box, nothing of the project's code.
 */
const documented = (() => {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const crc16 = (bytes: Uint8Array) => {
    let crc = 0;
    for (const b of bytes) {
      crc ^= b << 8;
      for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    return crc;
  };
  const base32 = (bytes: Uint8Array) => {
    let out = '';
    let bits = 0;
    let value = 0;
    for (const b of bytes) {
      value = (value << 8) | b;
      bits += 8;
      while (bits >= 5) {
        out += alphabet[(value >>> (bits - 5)) & 31];
        bits -= 5;
      }
    }
    return bits > 0 ? out + alphabet[(value << (5 - bits)) & 31] : out;
  };
  const unbase32 = (text: string) => {
    const out: number[] = [];
    let bits = 0;
    let value = 0;
    for (const c of text) {
      value = (value << 5) | alphabet.indexOf(c);
      bits += 5;
      if (bits >= 8) {
        out.push((value >>> (bits - 8)) & 0xff);
        bits -= 8;
      }
    }
    return Uint8Array.from(out);
  };
  const encodeKey = (raw: Uint8Array) => {
    const body = Uint8Array.from([0xb8, ...raw]);
    const crc = crc16(body);
    return base32(Uint8Array.from([...body, crc & 0xff, crc >> 8]));
  };
  const decodeKey = (text: string) => {
    const raw = unbase32(text);
    if (raw.length !== 35 || raw[0] !== 0xb8 || crc16(raw.subarray(0, 33)) !== (raw[33]! | (raw[34]! << 8))) throw new Error(`${text} is not a curve key`);
    return raw.subarray(1, 33);
  };
  return {
    seal(plain: Uint8Array, to: string): SealedValue {
      const sender = nacl.box.keyPair();
      const nonce = nacl.randomBytes(24);
      const box = nacl.box(plain, nonce, decodeKey(to), sender.secretKey);
      return { sealed: 'xkv1', to, from: encodeKey(sender.publicKey), box: Buffer.from([...Buffer.from('xkv1'), ...nonce, ...box]).toString('base64') };
    },
  };
})();

const host = () => sealingOf(newCurveSeed());

describe('sealed values', () => {
  it('a value sealed from the documented format alone opens on the host it is sealed to, byte for byte', () => {
    const h = host();
    for (const plain of [Buffer.from('s3cret\n'), randomBytes(4096), Buffer.alloc(0)]) {
      const opened = h.open(documented.seal(plain, h.publicKey()));
      expect(Buffer.isBuffer(opened) && opened.equals(plain)).toBe(true);
    }
  });

  it("meshctl's sender makes nkeys' xkey messages: the xkey API opens them, and the sender opens its own", () => {
    const seed = newCurveSeed();
    const kp = fromCurveSeed(new TextEncoder().encode(seed));
    const sender = new CurveSender('SOAFAKEOPERATORSEEDFORATESTONLY');
    const sealed = sender.seal(Buffer.from('token-123'), kp.getPublicKey())!;
    expect(Buffer.from(kp.open(Buffer.from(sealed.box, 'base64'), sealed.from)!).toString()).toBe('token-123');
    expect(sender.openOwn(sealed)?.toString()).toBe('token-123');
    // And the other way: what the xkey API seals, the host opens.
    const other = createCurve();
    const box = other.seal(Buffer.from('from-xkeys'), kp.getPublicKey());
    const opened = sealingOf(seed).open({ sealed: 'xkv1', to: kp.getPublicKey(), from: other.getPublicKey(), box: Buffer.from(box).toString('base64') });
    expect(Buffer.isBuffer(opened) && opened.toString()).toBe('from-xkeys');
  });

  it('a value sealed for another host is refused as such; a box that does not open is refused as such', () => {
    const mine = host();
    const theirs = host();
    const forThem = documented.seal(Buffer.from('x'), theirs.publicKey());
    expect(mine.open(forThem)).toEqual({ kind: 'other-host', to: theirs.publicKey(), mine: mine.publicKey() });
    const sealed = documented.seal(Buffer.from('secret'), mine.publicKey());
    const bytes = Buffer.from(sealed.box, 'base64');
    bytes[bytes.length - 1]! ^= 1;
    expect(mine.open({ ...sealed, box: bytes.toString('base64') })).toEqual({ kind: 'does-not-open' });
    expect(mine.open({ ...sealed, box: 'eGt2MQ==' })).toEqual({ kind: 'does-not-open' });
  });

  it('the digest is keyed by the host: the same secret digests the same on one host and differently on two', () => {
    const a = host();
    const b = host();
    expect(a.digest('same')).toBe(a.digest('same'));
    expect(a.digest('same')).not.toBe(b.digest('same'));
    expect(a.digest('same')).not.toContain('same');
  });

  it('the schema takes a sealed content on a sensitive file and a sealed env value named sensitive, and refuses either otherwise, by JSON path', async () => {
    const h = host();
    const sealed = documented.seal(Buffer.from('v'), h.publicKey());
    const declaration = (resources: object[]) => ({ version: 1, node: 'web-1', mode: 'converged', sequence: 1, resources });
    const image = { ref: `docker.io/library/nginx@sha256:${'a'.repeat(64)}` };
    const ok = await validateDeclaration(
      declaration([
        { type: 'file', id: 'f', path: '/etc/f', content: sealed, sensitive: true, mode: '0600' },
        { type: 'container', id: 'c', name: 'c', image, state: 'running', env: { A: sealed, B: 'plain' }, sensitiveEnv: ['A'] },
      ]),
    );
    expect(ok.ok ? [] : ok.problems).toEqual([]);
    const bad = await validateDeclaration(
      declaration([
        { type: 'file', id: 'f', path: '/etc/f', content: sealed },
        { type: 'file', id: 'g', path: '/etc/g', content: sealed, sensitive: true, encoding: 'base64' },
        { type: 'file', id: 'h', path: '/etc/h', content: { ...sealed, to: 'not-a-key' }, sensitive: true },
        { type: 'container', id: 'c', name: 'c', image, state: 'running', env: { A: sealed } },
      ]),
    );
    const paths = bad.ok ? [] : bad.problems.map((p) => p.path);
    expect(paths).toEqual(expect.arrayContaining(['/resources/0/sensitive', '/resources/1/encoding', '/resources/3/env/A']));
    expect(paths.some((p) => p.startsWith('/resources/2/content'))).toBe(true);
  });
});
