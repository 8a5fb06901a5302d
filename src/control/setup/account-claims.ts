import { lazy } from '../../core/system/interop.js';
import type { KeyPair } from './nats-accounts.js';

/** An account JWT's claims, as NATS's servers read them (times in seconds). */
export interface AccountClaims {
  /** The account's public key (A…). */
  sub: string;
  /** Who signed it: the operator (O…). */
  iss: string;
  name: string;
  iat: number;
  nats: { revocations?: Record<string, number> } & Record<string, unknown>;
}

/** An account JWT's claims, its signature checked against its issuer; why not, when it is not one. */
export async function decodeAccountJwt(token: string): Promise<AccountClaims | string> {
  const jwt = await lazy(import('@nats-io/jwt'));
  try {
    const claims = jwt.decode<AccountClaims['nats']>(token.trim()) as unknown as AccountClaims;
    if (typeof claims.sub !== 'string' || !claims.sub.startsWith('A')) return 'not an account JWT (its subject is no account key)';
    return claims;
  } catch (err) {
    return `not a JWT the operator signed: ${(err as Error).message}`;
  }
}

const seconds = (ms: number) => Math.floor(ms / 1000);

/**
 * The account's JWT again with `users` revoked (NATS refuses a user whose JWT was issued at or before
 * its revocation time: `at`, now), signed by the operator. Its issue time is strictly after the JWT it
 * replaces: a server's resolver keeps whichever it holds unless the other was issued later, so an update
 * made within the same second as the one before it would be lost to a restart or to the servers' sync.
 */
export async function reissueWithRevocations(options: { operator: KeyPair; current: string; users: string[] }): Promise<{ jwt: string; claims: AccountClaims; revokedAt: number }> {
  const current = await decodeAccountJwt(options.current);
  if (typeof current === 'string') throw new Error(`the account JWT: ${current}`);
  if (current.iss !== options.operator.getPublicKey()) throw new Error(`the account JWT was signed by ${current.iss}, not by the operator key given (${options.operator.getPublicKey()})`);
  while (seconds(Date.now()) <= current.iat) await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5));
  const revokedAt = seconds(Date.now());
  const revocations = { ...current.nats.revocations };
  for (const user of options.users) revocations[user] = Math.max(revocations[user] ?? 0, revokedAt);
  const jwt = await lazy(import('@nats-io/jwt'));
  const { type: _type, version: _version, ...fields } = current.nats;
  const token = await jwt.encodeAccount(current.name, current.sub, { ...fields, revocations }, { signer: options.operator });
  const claims = await decodeAccountJwt(token);
  if (typeof claims === 'string') throw new Error(`the new account JWT: ${claims}`);
  return { jwt: token, claims, revokedAt };
}
