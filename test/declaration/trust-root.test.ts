import { describe, expect, it } from 'vitest';
import { newNkeySeed, nkeySeed } from '../../src/core/declaration/nkey.js';
import { addSignatures, openTrustRecord, retiredKeys, selfSignedProblem, signerRule, signRoot, stepProblem, TRUST_ROOT_KIND, type TrustRecord, type TrustRoot } from '../../src/core/declaration/trust-root.js';
import { cosign, openEnvelope, sign, signBytes, signaturesOf } from '../../src/core/declaration/envelope.js';

const seed = () => newNkeySeed('operator');
const pub = (s: string) => (nkeySeed(s, 'operator') as { publicKey: string }).publicKey;
const [c1, c2, c3, r1, r2, stranger] = [seed(), seed(), seed(), seed(), seed(), seed()];

const root = (version: number, control: string[], threshold = 1, recovery = [r1], recoveryThreshold = 1): TrustRoot => ({
  kind: TRUST_ROOT_KIND,
  version,
  control: { keys: control.map(pub), threshold },
  recovery: { keys: recovery.map(pub), threshold: recoveryThreshold },
});
const open = (record: TrustRecord) => {
  const r = openTrustRecord(record);
  if (!r.ok) throw new Error(r.reason);
  return r.opened;
};
const v1 = root(1, [c1]);

describe('the trust root record', () => {
  it('version 1 is taken on the threshold of its own control keys', () => {
    expect(selfSignedProblem(open(signRoot(v1, [c1])))).toBeUndefined();
    expect(selfSignedProblem(open(signRoot(v1, [stranger])))).toMatch(/0 valid signature\(s\) of its own control keys; it needs 1/);
  });

  it('follows version N+1 signed by the old control keys and its own', () => {
    expect(stepProblem(v1, open(signRoot(root(2, [c2]), [c1, c2])))).toBeUndefined();
  });

  it('counts a signature once per key, never twice because it appears twice', () => {
    const v2 = root(2, [c2, c3], 2);
    const once = signRoot(v2, [c1, c2]);
    const twice: TrustRecord = { ...once, signatures: [...once.signatures, once.signatures[1]!] };
    expect(twice.signatures.filter((s) => s.key === pub(c2))).toHaveLength(2);
    expect(stepProblem(v1, open(twice))).toMatch(/not signed by 2 of its own control keys \(it has 1\)/);
    expect(stepProblem(v1, open(addSignatures(once, [c3])))).toBeUndefined();
  });

  it('refuses a version skipped, repeated, or older than the one held', () => {
    const v2 = root(2, [c2]);
    const held = root(2, [c2]);
    expect(stepProblem(v1, open(signRoot(root(3, [c2]), [c1, c2])))).toMatch(/trust version 3 skips version 2/);
    expect(stepProblem(held, open(signRoot(v2, [c1, c2])))).toMatch(/trust version 2 is not newer than the version held \(2\)/);
    expect(stepProblem(root(3, [c2]), open(signRoot(v2, [c1, c2])))).toMatch(/is not newer than the version held \(3\)/);
  });

  it('refuses a version signed by the retired keys only', () => {
    const v2 = root(2, [c2]);
    const chain = [v1, v2];
    const retired = retiredKeys(chain);
    expect(retired.get(pub(c1))).toBe(2);
    // The thief of c1 makes version 3 with a key of their own.
    const forged = open(signRoot(root(3, [stranger]), [c1, stranger]));
    expect(stepProblem(v2, forged, retired)).toMatch(/not signed by 1 of the control keys of version 2 \(it has 0\).*signed only by keys retired before \(O\w+ at trust version 2\)/);
    // The same made by the key in force is followed.
    expect(stepProblem(v2, open(signRoot(root(3, [c3]), [c2, c3])), retired)).toBeUndefined();
  });

  it('a recovery key alone replaces the control keys; its new key must sign too', () => {
    const recovered = root(2, [c3]);
    expect(stepProblem(v1, open(signRoot(recovered, [r1, c3])))).toBeUndefined();
    expect(stepProblem(v1, open(signRoot(recovered, [r1])))).toMatch(/not signed by 1 of its own control keys/);
    const twoOfTwo = root(1, [c1], 1, [r1, r2], 2);
    expect(stepProblem(twoOfTwo, open(signRoot(root(2, [c3], 1, [r1, r2], 2), [r1, c3])))).toMatch(/nor by 2 of its recovery keys \(it has 1\)/);
    expect(stepProblem(twoOfTwo, open(signRoot(root(2, [c3], 1, [r1, r2], 2), [r1, r2, c3])))).toBeUndefined();
  });

  it('refuses the whole record for one unknown field, wherever it is', () => {
    const good = signRoot(v1, [c1]);
    // Signed as it stands, unknown field and all: only the field is wrong.
    const signedAsIs = (value: object) => {
      const bytes = Buffer.from(JSON.stringify(value));
      return { root: bytes.toString('base64'), signatures: [signBytes(bytes, c1)] };
    };
    const withRoot = (extra: object) => signedAsIs({ ...v1, ...extra });
    expect(openTrustRecord({ ...good, note: 'x' })).toEqual({ ok: false, reason: '/note: unknown field; the whole record is refused' });
    expect(openTrustRecord({ ...good, signatures: [{ ...good.signatures[0]!, at: 1 }] })).toMatchObject({ ok: false, reason: expect.stringContaining('/signatures/0/at: unknown field') });
    expect(openTrustRecord(withRoot({ expires: '2030' }))).toMatchObject({ ok: false, reason: expect.stringContaining('/root/expires: unknown field') });
    const nested = signedAsIs({ ...v1, control: { ...v1.control, weight: 2 } });
    expect(openTrustRecord(nested)).toMatchObject({ ok: false, reason: expect.stringContaining('/root/control/weight: unknown field') });
    expect(openTrustRecord(good).ok).toBe(true);
  });

  it('refuses a recovery key that is also a control key, and a threshold out of reach', () => {
    expect(openTrustRecord(signRoot(root(1, [c1], 1, [c1]), [c1]))).toMatchObject({ ok: false, reason: expect.stringContaining('both a control key and a recovery key') });
    expect(openTrustRecord(signRoot(root(1, [c1], 2), [c1]))).toMatchObject({ ok: false, reason: expect.stringContaining('/root/control/threshold') });
  });
});

describe('a declaration under the trust root', () => {
  const payload = Buffer.from('{"any":"bytes"}');

  it('needs the threshold of distinct control keys: a key that signs twice counts once', async () => {
    const rule = signerRule([root(1, [c1, c2], 2)]);
    const one = await sign(payload, c1);
    expect(openEnvelope(one, rule)).toMatchObject({ ok: false, kind: 'unapproved', reason: expect.stringContaining('1 valid signature of the control keys; trust version 1 needs 2') });
    const doubled = { payload: one.payload, signatures: [...signaturesOf(one), ...signaturesOf(one)] };
    expect(openEnvelope(doubled, rule)).toMatchObject({ ok: false, kind: 'unapproved' });
    expect(openEnvelope(cosign(one, c2), rule)).toMatchObject({ ok: true, keys: [pub(c1), pub(c2)] });
  });

  it('names a key retired by a rotation, with the version that retired it', async () => {
    const rule = signerRule([root(1, [c1]), root(2, [c2]), root(3, [c3])]);
    expect(openEnvelope(await sign(payload, c1), rule)).toEqual({ ok: false, kind: 'retired', reason: `signed by a key retired at trust version 2 (${pub(c1)})` });
    expect(openEnvelope(await sign(payload, c2), rule)).toMatchObject({ kind: 'retired', reason: expect.stringContaining('retired at trust version 3') });
    expect(openEnvelope(await sign(payload, stranger), rule)).toMatchObject({ kind: 'forged', reason: expect.stringContaining('not a control key of trust version 3') });
    expect(openEnvelope(await sign(payload, r1), rule)).toMatchObject({ kind: 'forged', reason: expect.stringContaining('recovery keys sign trust roots, never declarations') });
    expect(openEnvelope(await sign(payload, c3), rule)).toMatchObject({ ok: true });
  });

  it('keeps the one-signature envelope working at threshold 1', async () => {
    const envelope = await sign(payload, c1);
    expect(Object.keys(envelope).sort()).toEqual(['key', 'payload', 'signature']);
    expect(openEnvelope(envelope, signerRule([v1]))).toMatchObject({ ok: true, keys: [pub(c1)] });
  });
});
