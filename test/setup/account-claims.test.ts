import { describe, expect, it } from 'vitest';
import { createAccount, createOperator } from '@nats-io/nkeys';
import { encodeAccount } from '@nats-io/jwt';
import { decodeAccountJwt, reissueWithRevocations } from '../../src/control/setup/account-claims.js';

describe("the account's JWT issued again with users revoked", () => {
  it('keeps every claim, adds the revocations to those before, and is issued strictly after the JWT it replaces', async () => {
    const operator = createOperator();
    const account = createAccount();
    const signing = createAccount();
    const first = await encodeAccount('mesh', account, { limits: { conn: -1, subs: -1 }, signing_keys: [signing.getPublicKey()] }, { signer: operator });
    const before = await decodeAccountJwt(first);
    if (typeof before === 'string') throw new Error(before);
    const once = await reissueWithRevocations({ operator, current: first, users: ['UAAA'] });
    const twice = await reissueWithRevocations({ operator, current: once.jwt, users: ['UBBB'] });
    expect(once.claims.iat).toBeGreaterThan(before.iat);
    expect(twice.claims.iat).toBeGreaterThan(once.claims.iat);
    expect(twice.claims.nats.revocations).toEqual({ UAAA: once.revokedAt, UBBB: twice.revokedAt });
    expect(twice.claims).toMatchObject({ sub: account.getPublicKey(), iss: operator.getPublicKey(), name: 'mesh', nats: { limits: { conn: -1, subs: -1 }, signing_keys: [signing.getPublicKey()], type: 'account', version: 2 } });
  }, 10_000);

  it('refuses a JWT another operator signed, and one that is not an account', async () => {
    const operator = createOperator();
    const other = await encodeAccount('mesh', createAccount(), {}, { signer: createOperator() });
    await expect(reissueWithRevocations({ operator, current: other, users: ['UAAA'] })).rejects.toThrow(/signed by O.*not by the operator key given/);
    expect(await decodeAccountJwt('not.a.jwt')).toMatch(/not a JWT the operator signed/);
  });
});
