import { createHmac, createPrivateKey, createPublicKey, diffieHellman, randomBytes, type KeyObject } from 'node:crypto';
import nacl from 'tweetnacl';
import { encodePublicNkey, encodeSeed, rawPublicNkey, rawSeed } from './nkey.js';
import { CURVE_KEY_PATTERN, isSealed, SEALED_FORMAT, type SealedValue } from '../vocabulary/sealed-value.js';

export { CURVE_KEY_PATTERN, isSealed, SEALED_FORMAT, type SealedValue };
const HEADER = Buffer.from(SEALED_FORMAT, 'latin1');
const NONCE_BYTES = 24;
const CURVE_KEY = new RegExp(CURVE_KEY_PATTERN);
/** The prefix byte of a curve public key ('X'). */
const CURVE_PREFIX = 23 << 3;
/** DER prefix of an X25519 PKCS#8 private key; the 32 raw bytes follow. */
const X25519_PKCS8 = Buffer.from('302e020100300506032b656e04220420', 'hex');
const X25519_SPKI = Buffer.from('302a300506032b656e032100', 'hex');
const SIGMA = Buffer.from('expand 32-byte k', 'latin1');

export const isCurveKey = (text: string) => CURVE_KEY.test(text);

/** Why a sealed value cannot be opened here: sealed to another host's key, or a box that does not open. */
export type OpenProblem = { kind: 'other-host'; to: string; mine: string } | { kind: 'does-not-open' };

/** What opens sealed values on a host, and digests what they hold under a key of the host's own. */
export interface Sealing {
  /** The host's curve public key (X…). */
  publicKey(): string;
  open(value: SealedValue): Buffer | OpenProblem;
  /** A keyed digest (HMAC-SHA256 under the host's own key): equal secrets on two hosts do not match. */
  digest(plain: Uint8Array | string): string;
}

/** The words of a refusal to open. */
export function describeOpenProblem(p: OpenProblem): string {
  return p.kind === 'other-host'
    ? `the value is sealed for another host (to ${p.to}; this host's curve key is ${p.mine}): seal it again for this host (meshctl reseal NODE, or send again)`
    : 'the sealed value does not open with this host\'s curve key (damaged, or not sealed to it): nothing of it is used';
}

/** A curve seed's kind: 'S' then 'X', as nkeys write an xkey's seed. */
const CURVE_SEED = { byte: CURVE_PREFIX, letter: 'X', name: 'curve' };

/** A new curve seed (SX…): 32 random bytes, encoded as nkeys encode an xkey's seed. */
export function newCurveSeed(): string {
  return encodeSeed(CURVE_PREFIX, randomBytes(32));
}

/** 32 raw bytes as a native X25519 private key. */
function x25519Secret(raw: Uint8Array): KeyObject {
  return createPrivateKey({ key: Buffer.concat([X25519_PKCS8, raw]), format: 'der', type: 'pkcs8' });
}

/** A curve seed (SX…) as a native X25519 private key; undefined when the text is not one. */
function curveSecret(seed: string): KeyObject | undefined {
  const raw = rawSeed(seed, CURVE_SEED);
  return typeof raw === 'string' ? undefined : x25519Secret(raw);
}

/** The public key (X…) of a native X25519 private key. */
function curvePublicOf(secret: KeyObject): string {
  return encodePublicNkey(CURVE_PREFIX, createPublicKey(secret).export({ format: 'der', type: 'spki' }).subarray(X25519_SPKI.length));
}

/** The public key (X…) of a curve seed; undefined when the text is not one. */
export function curvePublicKey(seed: string): string | undefined {
  const secret = curveSecret(seed);
  return secret && curvePublicOf(secret);
}

/** The raw 32 bytes of a curve public key (X…), checked (prefix and checksum); undefined when it is not one. */
export function rawCurveKey(text: string): Buffer | undefined {
  return isCurveKey(text) ? rawPublicNkey(text, CURVE_PREFIX) : undefined;
}

/**
 * The key a box between `secret` and the curve key `other` (X…) is sealed under: X25519, then HSalsa20,
 * as nacl.box.before computes it, natively (a tenth of a millisecond); undefined when `other` is not a key.
 */
function boxKey(secret: KeyObject, other: string): Uint8Array | undefined {
  const raw = rawCurveKey(other);
  if (!raw) return undefined;
  let point: Buffer;
  try {
    point = diffieHellman({ privateKey: secret, publicKey: createPublicKey({ key: Buffer.concat([X25519_SPKI, raw]), format: 'der', type: 'spki' }) });
  } catch {
    // OpenSSL refuses a point of small order (the shared secret would be all zeros): no box opens with it.
    return undefined;
  }
  const key = new Uint8Array(32);
  // tweetnacl exports its lowlevel functions without declaring them: HSalsa20 is the one needed here.
  (nacl as unknown as { lowlevel: { crypto_core_hsalsa20(out: Uint8Array, input: Uint8Array, k: Uint8Array, c: Uint8Array): void } }).lowlevel.crypto_core_hsalsa20(key, new Uint8Array(16), point, SIGMA);
  return key;
}

/** Opens a sealed value's box (the format's header, the nonce, nacl's secretbox) under a box key; undefined when it does not open. */
function openBox(value: SealedValue, key: Uint8Array): Buffer | undefined {
  const bytes = Buffer.from(value.box, 'base64');
  if (bytes.length < HEADER.length + NONCE_BYTES || !bytes.subarray(0, HEADER.length).equals(HEADER)) return undefined;
  const opened = nacl.secretbox.open(bytes.subarray(HEADER.length + NONCE_BYTES), bytes.subarray(HEADER.length, HEADER.length + NONCE_BYTES), key);
  return opened ? Buffer.from(opened) : undefined;
}

/**
 * Opens a sealed value with the host's curve seed: the bytes of nkeys' xkey seal (and of nacl.box),
 * opened natively, so that a host applying a declaration loads no NATS library for it.
 */
export function openSealed(value: SealedValue, seed: string, mine: string): Buffer | OpenProblem {
  if (value.to !== mine) return { kind: 'other-host', to: value.to, mine };
  const secret = curveSecret(seed);
  const key = secret && boxKey(secret, value.from);
  return (key && openBox(value, key)) ?? { kind: 'does-not-open' };
}

/** The host's opener: its curve seed, and a digest key derived from it (so one file holds both). */
export function sealingOf(seed: string): Sealing {
  const mine = curvePublicKey(seed);
  if (mine === undefined) throw new Error('not a curve seed (SX…)');
  const digestKey = createHmac('sha256', seed).update('mesh-host sealed digest v1').digest();
  return {
    publicKey: () => mine,
    open: (value) => openSealed(value, seed, mine),
    digest: (plain) => `k:${createHmac('sha256', digestKey).update(plain).digest('base64')}`,
  };
}


/**
 * What seals on the control side: one curve key, derived from the operator's seed, so that the
 * control plane can open what it sealed (to seal it again for a host whose key changed, or to compare
 * with what a key holds). Box keys are computed natively (X25519 in OpenSSL, a tenth of a millisecond)
 * and kept per recipient; the bytes are those of nacl.box, opened by nkeys' xkey open.
 */
export class CurveSender {
  readonly publicKey: string;
  private readonly secret: KeyObject;
  private readonly shared = new Map<string, Uint8Array>();

  constructor(operatorSeed: string) {
    const raw = createHmac('sha256', operatorSeed.trim()).update('mesh-host sealing v1').digest();
    this.secret = x25519Secret(raw);
    this.publicKey = curvePublicOf(this.secret);
  }

  /** Seals bytes to a host's curve key (X…); undefined when the key is not one. */
  seal(plain: Uint8Array, to: string): SealedValue | undefined {
    const key = this.boxKey(to);
    if (!key) return undefined;
    const nonce = randomBytes(NONCE_BYTES);
    const box = nacl.secretbox(plain, nonce, key);
    return { sealed: SEALED_FORMAT, to, from: this.publicKey, box: Buffer.concat([HEADER, nonce, box]).toString('base64') };
  }

  /** Opens a value this sender sealed (to any host): what re-sealing and comparing need; undefined when it cannot. */
  openOwn(value: SealedValue): Buffer | undefined {
    if (value.from !== this.publicKey) return undefined;
    const key = this.boxKey(value.to);
    return key && openBox(value, key);
  }

  /** The box key for a recipient, kept per recipient. */
  private boxKey(to: string): Uint8Array | undefined {
    let key = this.shared.get(to);
    if (key) return key;
    key = boxKey(this.secret, to);
    if (key) this.shared.set(to, key);
    return key;
  }
}
