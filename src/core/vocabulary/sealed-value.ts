/**
 * A value sealed to one host: NaCl's box (X25519, XSalsa20, Poly1305) from the sender's curve key to
 * the host's, as NATS's xkeys seal. `box` is the xkey message, base64: "xkv1", the 24-byte nonce, and
 * the box. Only the host whose curve key is `to` opens it; the declaration's signature says who sent it.
 */
export interface SealedValue {
  sealed: typeof SEALED_FORMAT;
  /** The host's curve public key (X…) it is sealed to. */
  to: string;
  /** The sender's curve public key (X…): the other half of the box's key. */
  from: string;
  box: string;
}

export const SEALED_FORMAT = 'xkv1';
/** A curve public key as nkeys write it: 'X', then 55 more characters of base32. */
export const CURVE_KEY_PATTERN = '^X[A-Z2-7]{55}$';

export function isSealed(value: unknown): value is SealedValue {
  return typeof value === 'object' && value !== null && (value as { sealed?: unknown }).sealed === SEALED_FORMAT;
}
