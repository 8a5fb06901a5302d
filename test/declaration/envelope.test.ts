import { describe, expect, it } from 'vitest';
import { digestOf, newOperatorKey, openEnvelope, sign } from '../../src/declaration/envelope.js';
import { receiveDeclaration } from '../../src/declaration/load.js';

const payload = Buffer.from(JSON.stringify({ version: 1, node: 'n1', mode: 'adopted', sequence: 1, resources: [] }));

describe('signed envelopes', () => {
  it('opens what the pinned key signed, and gives the sha256 digest of the payload bytes', () => {
    const key = newOperatorKey();
    expect(key.seed).toMatch(/^SO/);
    expect(key.publicKey).toMatch(/^O/);
    const envelope = sign(payload, key.seed);
    expect(openEnvelope(envelope, key.publicKey)).toMatchObject({ ok: true, key: key.publicKey });
    const received = receiveDeclaration(Buffer.from(JSON.stringify(envelope)), { source: 'e', pinnedKey: key.publicKey });
    expect(received.digest).toBe(digestOf(payload));
    expect(received.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(received.signedBy).toBe(key.publicKey);
  });

  it('refuses another key, a forged signature and a changed payload', () => {
    const key = newOperatorKey();
    const other = newOperatorKey();
    const envelope = sign(payload, key.seed);
    expect(openEnvelope(envelope, other.publicKey)).toMatchObject({ ok: false, reason: expect.stringContaining('pinned key') });
    const forged = { ...sign(payload, other.seed), key: key.publicKey };
    expect(openEnvelope(forged, key.publicKey)).toMatchObject({ ok: false, reason: expect.stringContaining('does not match') });
    const changed = { ...envelope, payload: Buffer.from(payload.toString().replace('adopted', 'converged')).toString('base64') };
    expect(openEnvelope(changed)).toMatchObject({ ok: false });
  });

  it('checks the signature before the payload is parsed', () => {
    const key = newOperatorKey();
    const envelope = sign(Buffer.from('this is not JSON'), key.seed);
    const tampered = { ...envelope, signature: Buffer.alloc(64).toString('base64') };
    // A bad signature over garbage is refused for the signature, never for the garbage.
    expect(() => receiveDeclaration(Buffer.from(JSON.stringify(tampered)), { source: 'e' })).toThrow(/signature refused/);
    expect(() => receiveDeclaration(Buffer.from(JSON.stringify(envelope)), { source: 'e' })).toThrow(/signed payload is not JSON/);
  });

  it('refuses a plain declaration where a signature is required', () => {
    expect(() => receiveDeclaration(payload, { source: 'p', requireSignature: true })).toThrow(/not a signed envelope/);
  });
});
