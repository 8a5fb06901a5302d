import { describe, expect, it } from 'vitest';
import { digestOf, newOperatorKey, openEnvelope, sign } from '../../src/core/declaration/envelope.js';
import { receiveDeclaration } from '../../src/core/declaration/load.js';
import { pinnedKeyRoot, signerRule } from '../../src/core/declaration/trust-root.js';

const pinned = (key: string) => signerRule([pinnedKeyRoot(key)]);

const payload = Buffer.from(JSON.stringify({ version: 1, node: 'n1', mode: 'adopted', sequence: 1, resources: [] }));

describe('signed envelopes', () => {
  it('opens what the pinned key signed, and gives the sha256 digest of the payload bytes', async () => {
    const key = await newOperatorKey();
    expect(key.seed).toMatch(/^SO/);
    expect(key.publicKey).toMatch(/^O/);
    const envelope = await sign(payload, key.seed);
    expect(openEnvelope(envelope, pinned(key.publicKey))).toMatchObject({ ok: true, keys: [key.publicKey] });
    const received = await receiveDeclaration(Buffer.from(JSON.stringify(envelope)), { source: 'e', pinnedKey: key.publicKey });
    expect(received.digest).toBe(digestOf(payload));
    expect(received.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(received.signedBy).toBe(key.publicKey);
  });

  it('refuses another key, a forged signature and a changed payload', async () => {
    const key = await newOperatorKey();
    const other = await newOperatorKey();
    const envelope = await sign(payload, key.seed);
    expect(openEnvelope(envelope, pinned(other.publicKey))).toMatchObject({ ok: false, reason: expect.stringContaining('pinned key') });
    const forged = { ...(await sign(payload, other.seed)), key: key.publicKey };
    expect(openEnvelope(forged, pinned(key.publicKey))).toMatchObject({ ok: false, reason: expect.stringContaining('does not match') });
    const changed = { ...envelope, payload: Buffer.from(payload.toString().replace('adopted', 'converged')).toString('base64') };
    expect(openEnvelope(changed)).toMatchObject({ ok: false });
  });

  it('checks the signature before the payload is parsed', async () => {
    const key = await newOperatorKey();
    const envelope = await sign(Buffer.from('this is not JSON'), key.seed);
    const tampered = { ...envelope, signature: Buffer.alloc(64).toString('base64') };
    // A bad signature over garbage is refused for the signature, never for the garbage.
    await expect(receiveDeclaration(Buffer.from(JSON.stringify(tampered)), { source: 'e' })).rejects.toThrow(/signature refused/);
    await expect(receiveDeclaration(Buffer.from(JSON.stringify(envelope)), { source: 'e' })).rejects.toThrow(/signed payload is not JSON/);
  });

  it('refuses a plain declaration where a signature is required', async () => {
    await expect(receiveDeclaration(payload, { source: 'p', requireSignature: true })).rejects.toThrow(/not a signed envelope/);
  });
});
