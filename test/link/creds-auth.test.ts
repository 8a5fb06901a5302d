import { describe, expect, it } from 'vitest';
import { createAccount } from '@nats-io/nkeys';
import { credsAuthenticator } from '@nats-io/transport-node';
import { credsAuth } from '../../src/link/creds-auth.js';
import { issueCreds } from '../../src/control/setup/nats-accounts.js';
import { hostPermissions } from '../../src/link/permissions.js';

describe("the answer to the server's challenge from a credentials file", () => {
  it("is the NATS client's own answer, byte for byte: the same JWT, user key and Ed25519 signature of the nonce", async () => {
    const signer = createAccount();
    const text = await issueCreds({ name: 'mesh-host web-1', signer, account: signer.getPublicKey(), permissions: hostPermissions('web-1') });
    const ours = credsAuth(text);
    if (typeof ours === 'string') throw new Error(ours);
    const theirs = credsAuthenticator(new TextEncoder().encode(text));
    for (const nonce of ['kD4x1cTnZ_3sQ8aR', 'another-nonce-from-the-server']) expect(ours(nonce)).toEqual(theirs(nonce));
    expect(ours(undefined)).toEqual(theirs(undefined));
  });

  it('refuses, with a reason, what is not a credentials file or holds a seed that is not a user seed', async () => {
    expect(credsAuth('hello')).toBe('not a NATS credentials file (user JWT and seed)');
    const signer = createAccount();
    const text = await issueCreds({ name: 'x', signer, account: signer.getPublicKey() });
    const accountSeed = new TextDecoder().decode(signer.getSeed());
    const swapped = text.replace(/(-+BEGIN USER NKEY SEED-+\s*)\S+/, `$1${accountSeed}`);
    expect(credsAuth(swapped)).toBe('its seed is not a user seed (SU…)');
  });
});
