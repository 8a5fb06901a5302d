import { createHash, type KeyObject } from 'node:crypto';
import { nkeySeed, operatorKey, signEd25519, verifyEd25519 } from './nkey.js';
import { lazy } from '../system/interop.js';
import { decodeCanonicalBase64 } from '../vocabulary/base64.js';

/** nkeys is loaded only when a signature is made or checked: start-up without an envelope does not pay for it. */
const nkeys = () => lazy(import('@nats-io/nkeys'));

/**
 * What the link and genesis carry: Ed25519 signatures (operator nkeys) over the payload bytes. One
 * signature is `{payload, key, signature}`, as it always was; several (a trust root that asks for more
 * than one) are `{payload, signatures: [{key, signature}…]}`.
 */
export type Envelope = SingleEnvelope | MultiEnvelope;
export interface SingleEnvelope {
  payload: string;
  key: string;
  signature: string;
}
export interface Signature {
  key: string;
  signature: string;
}
export interface MultiEnvelope {
  payload: string;
  signatures: Signature[];
}

export function digestOf(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

const sameKeys = (value: object, names: string[]) => {
  const keys = Object.keys(value).sort();
  return keys.length === names.length && keys.every((k, i) => k === names[i]);
};

export function isEnvelope(value: unknown): value is Envelope {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return sameKeys(value, ['key', 'payload', 'signature']) || sameKeys(value, ['payload', 'signatures']);
}

/** The signatures an envelope carries, in either form. */
export function signaturesOf(envelope: Envelope): Signature[] {
  return 'signatures' in envelope ? envelope.signatures : [{ key: envelope.key, signature: envelope.signature }];
}

/** An envelope of these signatures: one in the form every host reads, more in the list form. */
export function envelopeOf(payload: string, signatures: Signature[]): Envelope {
  return signatures.length === 1 ? { payload, key: signatures[0]!.key, signature: signatures[0]!.signature } : { payload, signatures };
}

/**
 * The operator's seeds met in this process, as native signing keys: a fleet command signs a copy for
 * each of a thousand nodes, and nkeys' own Ed25519 (written in JavaScript) took about 45 ms a signature
 * here, where Node's takes a tenth of a millisecond.
 */
const signingKeys = new Map<string, ReturnType<typeof nkeySeed>>();

/** One signature over the bytes, with the operator seed given. */
export function signBytes(payload: Uint8Array, seed: string): Signature {
  const text = seed.trim();
  const parsed = signingKeys.get(text) ?? signingKeys.set(text, nkeySeed(text, 'operator')).get(text)!;
  if (typeof parsed === 'string') throw new Error(`the signing key is ${parsed}`);
  return { key: parsed.publicKey, signature: signEd25519(parsed.privateKey, payload).toString('base64') };
}

export async function sign(payload: Uint8Array, seed: string): Promise<Envelope> {
  const { key, signature } = signBytes(payload, seed);
  return { payload: Buffer.from(payload).toString('base64'), key, signature };
}

/** The envelope with one more signature by this seed (none added when its key signed already). */
export function cosign(envelope: Envelope, seed: string): Envelope {
  const payload = decodeCanonicalBase64(envelope.payload);
  if (payload === undefined) throw new Error('the payload is not base64 (canonical, padded)');
  const added = signBytes(payload, seed);
  const held = signaturesOf(envelope);
  if (held.some((s) => s.key === added.key)) return envelope;
  return envelopeOf(envelope.payload, [...held, added]);
}

/** The keys a declaration must be signed by: a trust root's control keys as the host holds them (trust-root.ts). */
export interface SignerRule {
  version: number;
  keys: readonly string[];
  /** Each control key decoded (or why it does not decode), once when the rule is made. */
  decoded: ReadonlyMap<string, KeyObject | string>;
  threshold: number;
  /** Keys of earlier versions that this one no longer holds, each with the version that retired it. */
  retiredAt: ReadonlyMap<string, number>;
  /** Recovery keys: they sign trust roots, never declarations. */
  recovery: readonly string[];
}

export type Opened =
  | { ok: true; payload: Buffer; keys: string[]; digest: string }
  | { ok: false; reason: string; kind: 'forged' | 'retired' | 'unapproved' };

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * Checks the signatures before anything reads the payload. With a rule, the envelope must carry valid
 * signatures of at least its threshold of distinct control keys (a key signing twice counts once);
 * without one, every signature must be consistent with the key it names.
 */
export function openEnvelope(envelope: Envelope, rule?: SignerRule): Opened {
  const forged = (reason: string): Opened => ({ ok: false, reason, kind: 'forged' });
  const multi = 'signatures' in envelope;
  const signatures = multi ? envelope.signatures : [envelope];
  if (typeof envelope.payload !== 'string' || !Array.isArray(signatures) || signatures.length === 0) return forged('the envelope needs a payload and at least one signature');
  for (const s of signatures) {
    if (typeof s !== 'object' || s === null || typeof s.key !== 'string' || typeof s.signature !== 'string') return forged('each signature needs a key and a signature, both strings');
    if (multi && !sameKeys(s, ['key', 'signature'])) return forged('a signature is {key, signature}, nothing else');
  }
  // Read strictly: a lenient decoder would let text other than what was signed verify.
  const payload = decodeCanonicalBase64(envelope.payload);
  if (payload === undefined) return forged('the payload is not base64 (canonical, padded)');
  const valid = new Set<string>();
  const retired: string[] = [];
  const strangers: string[] = [];
  let broken: string | undefined;
  for (const s of signatures) {
    if (valid.has(s.key)) continue;
    if (rule && !rule.keys.includes(s.key)) {
      if (rule.retiredAt.has(s.key)) retired.push(s.key);
      else strangers.push(s.key);
      continue;
    }
    const signature = decodeCanonicalBase64(s.signature);
    if (signature === undefined) return forged('the signature is not base64 (canonical, padded)');
    const key = rule?.decoded.get(s.key) ?? operatorKey(s.key);
    if (typeof key === 'string') return forged(`the key ${key}`);
    if (verifyEd25519(key, payload, signature)) valid.add(s.key);
    else if (!rule) return forged(`the signature does not match the payload for key ${s.key}`);
    else broken ??= s.key;
    if (rule && valid.size >= rule.threshold) break;
  }
  // The digest that names the declaration is the signed payload's, taken as it is opened.
  if (!rule || valid.size >= rule.threshold) return { ok: true, payload, keys: [...valid], digest: digestOf(payload) };
  if (valid.size > 0) {
    return { ok: false, kind: 'unapproved', reason: `${plural(valid.size, 'valid signature')} of the control keys; trust version ${rule.version} needs ${rule.threshold} (distinct keys): not approved` };
  }
  if (broken) return forged(`the signature does not match the payload for key ${broken}`);
  if (retired.length > 0) return { ok: false, kind: 'retired', reason: `signed by a key retired at trust version ${rule.retiredAt.get(retired[0]!)} (${retired[0]})` };
  const stranger = strangers[0]!;
  if (rule.recovery.includes(stranger)) return forged(`signed by ${stranger}, a recovery key of trust version ${rule.version}: recovery keys sign trust roots, never declarations`);
  // Version 0 is the one key a host enrolled before trust roots pinned: said as it always was.
  if (rule.version === 0) return forged(`signed by key ${stranger}, but the pinned key is ${rule.keys[0]}`);
  return forged(`signed by key ${stranger}, which is not a control key of trust version ${rule.version}`);
}

export interface KeyPairFiles {
  seed: string;
  publicKey: string;
}

export async function newOperatorKey(): Promise<KeyPairFiles> {
  const pair = (await nkeys()).createOperator();
  return { seed: new TextDecoder().decode(pair.getSeed()), publicKey: pair.getPublicKey() };
}
