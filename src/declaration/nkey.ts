import { createPublicKey, verify, type KeyObject } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
/** The nkey prefix byte of an operator public key ('O'). */
const OPERATOR = 14 << 3;
/** DER prefix of an Ed25519 SubjectPublicKeyInfo; the 32 raw key bytes follow. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

function base32Decode(text: string): Buffer | undefined {
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of text) {
    const i = ALPHABET.indexOf(ch);
    if (i < 0) return undefined;
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** CRC-16/XMODEM, as nkeys checksum their keys. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

const cache = new Map<string, KeyObject>();

/**
 * An operator public nkey (O…) as a native Ed25519 key: checked (prefix, length, checksum) and cached.
 * Verifying natively takes a tenth of a millisecond where the pure-JS one takes ten, on every delivery.
 */
export function operatorKey(text: string): KeyObject | string {
  const known = cache.get(text);
  if (known) return known;
  const raw = base32Decode(text);
  if (!raw || raw.length !== 35) return `${text} is not an nkey`;
  if (raw[0] !== OPERATOR) return `${text} is not an operator public key (O…)`;
  if (crc16(raw.subarray(0, 33)) !== raw.readUInt16LE(33)) return `${text} fails its checksum`;
  const key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw.subarray(1, 33)]), format: 'der', type: 'spki' });
  cache.set(text, key);
  return key;
}

export function verifyEd25519(key: KeyObject, payload: Uint8Array, signature: Uint8Array): boolean {
  return signature.length === 64 && verify(null, payload, key, signature);
}
