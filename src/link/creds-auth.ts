import type { Authenticator } from '@nats-io/transport-node';
import { nkeySeed, signEd25519 } from '../core/declaration/nkey.js';

/** The two armoured blocks of a credentials file, as the NATS client finds them: the user JWT, then its seed. */
const CREDS_BLOCK = /\s*(?:(?:[-]{3,}[^\n]*[-]{3,}\n)(.+)(?:\n\s*[-]{3,}[^\n]*[-]{3,}\n))/g;

/**
 * A credentials file (user JWT and seed) as the answer to the server's challenge on connecting: the JWT,
 * the user's public key and the nonce signed with its seed. The client's own credentials authenticator
 * derives the key pair from the seed again on every connect and signs in pure JavaScript, about 17 ms
 * of CPU a connect here (ten thousand hosts' connects on one machine, or a fleet's reconnect after a
 * server restart, is minutes of it); natively it is a tenth of a millisecond. Parsed once: a reconnect
 * answers with the same credentials. A reason when the text is not a credentials file.
 */
export function credsAuth(text: string): Authenticator | string {
  const blocks = [...text.matchAll(CREDS_BLOCK)].map((m) => m[1]!.trim());
  const [jwt, seed] = blocks;
  if (!jwt || !seed) return 'not a NATS credentials file (user JWT and seed)';
  const user = nkeySeed(seed, 'user');
  if (typeof user === 'string') return `its seed is ${user}`;
  return (nonce?: string) => ({ jwt, nkey: user.publicKey, sig: nonce ? signEd25519(user.privateKey, Buffer.from(nonce)).toString('base64') : '' });
}
