import { createHash } from 'node:crypto';
import { nkeySeed, operatorKey, signEd25519, verifyEd25519 } from './nkey.js';
import { lazy } from '../system/interop.js';
import { decodeCanonicalBase64 } from './base64.js';

/** nkeys is loaded only when a signature is made or checked: start-up without an envelope does not pay for it. */
const nkeys = () => lazy(import('@nats-io/nkeys'));

/** What the link and genesis carry: Ed25519 (an operator nkey) over the payload bytes. */
export interface Envelope {
  payload: string;
  key: string;
  signature: string;
}

export function digestOf(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

export function isEnvelope(value: unknown): value is Envelope {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const keys = Object.keys(value).sort();
  return keys.length === 3 && keys[0] === 'key' && keys[1] === 'payload' && keys[2] === 'signature';
}

/**
 * The operator's seeds met in this process, as native signing keys: a fleet command signs a copy for
 * each of a thousand nodes, and nkeys' own Ed25519 (written in JavaScript) took about 45 ms a signature
 * here, where Node's takes a tenth of a millisecond.
 */
const signingKeys = new Map<string, ReturnType<typeof nkeySeed>>();

export async function sign(payload: Uint8Array, seed: string): Promise<Envelope> {
  const text = seed.trim();
  const parsed = signingKeys.get(text) ?? signingKeys.set(text, nkeySeed(text, 'operator')).get(text)!;
  if (typeof parsed === 'string') throw new Error(`the signing key is ${parsed}`);
  return {
    payload: Buffer.from(payload).toString('base64'),
    key: parsed.publicKey,
    signature: signEd25519(parsed.privateKey, payload).toString('base64'),
  };
}

export type Opened = { ok: true; payload: Buffer; key: string } | { ok: false; reason: string };

/**
 * Checks the signature before anything reads the payload. With a pinned key the envelope must be
 * signed by it; without one, only that the envelope is consistent with the key it names.
 */
export function openEnvelope(envelope: Envelope, pinnedKey?: string): Opened {
  if (typeof envelope.payload !== 'string' || typeof envelope.key !== 'string' || typeof envelope.signature !== 'string') {
    return { ok: false, reason: 'the envelope fields payload, key and signature must be strings' };
  }
  if (pinnedKey !== undefined && envelope.key !== pinnedKey) {
    return { ok: false, reason: `signed by key ${envelope.key}, but the pinned key is ${pinnedKey}` };
  }
  // Read strictly: a lenient decoder would let text other than what was signed verify.
  const payload = decodeCanonicalBase64(envelope.payload);
  if (payload === undefined) return { ok: false, reason: 'the payload is not base64 (canonical, padded)' };
  const signature = decodeCanonicalBase64(envelope.signature);
  if (signature === undefined) return { ok: false, reason: 'the signature is not base64 (canonical, padded)' };
  const key = operatorKey(envelope.key);
  if (typeof key === 'string') return { ok: false, reason: `the key ${key}` };
  const valid = verifyEd25519(key, payload, signature);
  if (!valid) return { ok: false, reason: `the signature does not match the payload for key ${envelope.key}` };
  return { ok: true, payload, key: envelope.key };
}

export interface KeyPairFiles {
  seed: string;
  publicKey: string;
}

export async function newOperatorKey(): Promise<KeyPairFiles> {
  const pair = (await nkeys()).createOperator();
  return { seed: new TextDecoder().decode(pair.getSeed()), publicKey: pair.getPublicKey() };
}
