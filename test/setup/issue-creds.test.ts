import { describe, expect, it } from 'vitest';
import { createAccount, fromSeed } from '@nats-io/nkeys';
import { decode } from '@nats-io/jwt';
import { issueCreds, userOfCreds } from '../../src/control/setup/nats-accounts.js';
import { hostPermissions } from '../../src/link/permissions.js';

const seedOfCreds = (creds: string) => /-+BEGIN USER NKEY SEED-+\s*(\S+)/.exec(creds)![1]!;

describe('a credentials file issued for a user of the mesh account', () => {
  it("by a signing key: the JWT library's own decode verifies it, its subject is the seed's user, it is issued on the account's behalf with the permissions given", async () => {
    const [account, signing] = [createAccount(), createAccount()];
    const creds = await issueCreds({ name: 'mesh-host web-1', signer: signing, account: account.getPublicKey(), permissions: hostPermissions('web-1') });
    const token = /-----BEGIN NATS USER JWT-----\s*(\S+)/.exec(creds)![1]!;
    const claims = decode<{ issuer_account?: string; pub?: { allow?: string[] } }>(token);
    expect(claims.iss).toBe(signing.getPublicKey());
    expect(claims.nats.issuer_account).toBe(account.getPublicKey());
    expect(claims.sub).toBe(fromSeed(new TextEncoder().encode(seedOfCreds(creds))).getPublicKey());
    expect(userOfCreds(creds)).toBe(claims.sub);
    expect(claims.nats.pub?.allow).toEqual(hostPermissions('web-1').pub.allow);
  });

  it("by the account's own key: issued by the account itself, no issuer account named; every file a new user", async () => {
    const account = createAccount();
    const [a, b] = await Promise.all([issueCreds({ name: 'meshctl', signer: account, account: account.getPublicKey() }), issueCreds({ name: 'meshctl', signer: account, account: account.getPublicKey() })]);
    const claims = decode<{ issuer_account?: string }>(/-----BEGIN NATS USER JWT-----\s*(\S+)/.exec(a)![1]!);
    expect(claims.iss).toBe(account.getPublicKey());
    expect(claims.nats.issuer_account).toBeUndefined();
    expect(userOfCreds(a)).not.toBe(userOfCreds(b));
  });
});
