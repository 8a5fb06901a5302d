import { createPublicKey } from 'node:crypto';
import { lazy } from '../../core/system/interop.js';
import { newNkeySeed, nkeySeed, signEd25519, verifyEd25519 } from '../../core/declaration/nkey.js';

type Nkeys = typeof import('@nats-io/nkeys');
/** An nkey pair as the NATS libraries hold it. */
export type KeyPair = ReturnType<Nkeys['createOperator']>;

/** The account the mesh's clients live in: JetStream on, no limits but the servers' own. */
export const MESH_ACCOUNT_NAME = 'mesh';
export const SYSTEM_ACCOUNT_NAME = 'SYS';

/** The permissions of a user JWT, as NATS's claims hold them (the response time in nanoseconds). */
export interface UserPermissions {
  pub?: { allow?: string[]; deny?: string[] };
  sub?: { allow?: string[]; deny?: string[] };
  resp?: { max: number; ttl: number };
}

/** A key pair written as its seed (secret) and its public key. */
export interface SeedAndKey {
  seed: string;
  publicKey: string;
}

/**
 * Everything a NATS server in operator mode needs to admit the mesh's clients, and the secrets to issue
 * more: the operator that signs the accounts, the mesh's account (JetStream on) with a signing key that
 * issues hosts' credentials (`meshctl node-creds`), the system account the servers speak in, and the
 * control side's own credentials in the mesh's account.
 */
export interface MeshAccounts {
  operator: SeedAndKey & { jwt: string };
  account: SeedAndKey & { jwt: string };
  /** Issues users on the account's behalf; can be replaced without re-issuing the account. */
  accountSigning: SeedAndKey;
  system: SeedAndKey & { jwt: string };
  /** The control side's credentials file (user JWT and seed): the account's user without restrictions. */
  controlCreds: string;
  /**
   * A user of the system account (credentials file): what meshctl pushes account JWTs with
   * (`$SYS.REQ.CLAIMS.UPDATE`), and what a site's leaf node binds the system account with.
   */
  systemCreds: string;
}

const NO_LIMIT = -1;
/** An account limited by nothing but the servers: every count unbounded, JetStream storage included (which turns JetStream on for it). */
const UNLIMITED = { subs: NO_LIMIT, data: NO_LIMIT, payload: NO_LIMIT, imports: NO_LIMIT, exports: NO_LIMIT, wildcards: true, conn: NO_LIMIT, leaf: NO_LIMIT, mem_storage: NO_LIMIT, disk_storage: NO_LIMIT, streams: NO_LIMIT, consumer: NO_LIMIT };

/**
 * The system account's limits: connections and subscriptions unbounded (meshctl pushes the accounts'
 * JWTs as its user, and each site's leaf node binds it), no JetStream. An account JWT without limits
 * admits no connection at all.
 */
export const SYSTEM_LIMITS = { subs: NO_LIMIT, data: NO_LIMIT, payload: NO_LIMIT, imports: NO_LIMIT, exports: NO_LIMIT, wildcards: true, conn: NO_LIMIT, leaf: NO_LIMIT };

/** The system account's JWT, signed by the operator. */
export async function systemAccountJwt(operator: KeyPair, system: KeyPair | string): Promise<string> {
  const jwt = await lazy(import('@nats-io/jwt'));
  return jwt.encodeAccount(SYSTEM_ACCOUNT_NAME, system, { limits: SYSTEM_LIMITS }, { signer: operator });
}

const seedOf = (kp: KeyPair) => new TextDecoder().decode(kp.getSeed());
const pair = (kp: KeyPair): SeedAndKey => ({ seed: seedOf(kp), publicKey: kp.getPublicKey() });

/** Makes the operator, the mesh's account and its signing key, the system account and the control side's credentials. */
export async function makeMeshAccounts(operatorName = 'mesh'): Promise<MeshAccounts> {
  const [nkeys, jwt] = await Promise.all([lazy(import('@nats-io/nkeys')), lazy(import('@nats-io/jwt'))]);
  const operator = nkeys.createOperator();
  const account = nkeys.createAccount();
  const signing = nkeys.createAccount();
  const system = nkeys.createAccount();
  const operatorJwt = await jwt.encodeOperator(operatorName, operator, { system_account: system.getPublicKey() });
  const accountJwt = await jwt.encodeAccount(MESH_ACCOUNT_NAME, account, { limits: UNLIMITED, signing_keys: [signing.getPublicKey()] }, { signer: operator });
  const systemJwt = await systemAccountJwt(operator, system);
  const [controlCreds, systemCreds] = await Promise.all([
    issueCreds({ name: 'meshctl', signer: signing, account: account.getPublicKey() }),
    issueCreds({ name: 'meshctl-system', signer: system, account: system.getPublicKey() }),
  ]);
  return {
    operator: { ...pair(operator), jwt: operatorJwt },
    account: { ...pair(account), jwt: accountJwt },
    accountSigning: pair(signing),
    system: { ...pair(system), jwt: systemJwt },
    controlCreds,
    systemCreds,
  };
}

/**
 * A credentials file (user JWT and seed) for a new user of the account, issued by `signer`: the
 * account's own key, or one of its signing keys (the JWT then names the account it issues for).
 * Without permissions the user may do anything in the account.
 */
export async function issueCreds(options: { name: string; signer: KeyPair; account: string; permissions?: UserPermissions }): Promise<string> {
  const jwt = await lazy(import('@nats-io/jwt'));
  const user = nativeKeyPair(newNkeySeed('user'), 'user');
  const signer = nativeKeyPair(new TextDecoder().decode(options.signer.getSeed()), 'account');
  const onBehalf = signer.getPublicKey() !== options.account;
  const token = await jwt.encodeUser(options.name, user, onBehalf ? options.account : signer, options.permissions ?? {}, onBehalf ? { signer } : {});
  return new TextDecoder().decode(jwt.fmtCreds(token, user));
}

/**
 * An nkey pair that signs with node:crypto, in the shape the JWT library takes. The library's own
 * pairs derive the key pair from the seed again, in pure JavaScript, each time they are asked for the
 * public key or a signature: a JWT issued costs about 30 ms of CPU that way and a tenth of a
 * millisecond this way (ten thousand hosts' credentials: five minutes against a second).
 */
function nativeKeyPair(seed: string, kind: 'user' | 'account'): KeyPair {
  const pair = nkeySeed(seed, kind);
  if (typeof pair === 'string') throw new Error(`${kind} seed: ${pair}`);
  const seedBytes = new TextEncoder().encode(seed);
  const publicKey = createPublicKey(pair.privateKey);
  const never = () => {
    throw new Error('an nkey signing pair does not seal or open');
  };
  return {
    getPublicKey: () => pair.publicKey,
    // Asked for by the library only to see that the pair can sign: its seed holds the private key.
    getPrivateKey: () => seedBytes,
    getSeed: () => seedBytes,
    sign: (input) => new Uint8Array(signEd25519(pair.privateKey, input)),
    verify: (input, sig) => verifyEd25519(publicKey, input, sig),
    clear: () => {},
    seal: never,
    open: never,
  };
}

/** The public key of the user a credentials file holds (its JWT's subject). */
export function userOfCreds(creds: string): string | undefined {
  const token = /-----BEGIN NATS USER JWT-----\s*([A-Za-z0-9_.-]+)/.exec(creds)?.[1];
  try {
    return (JSON.parse(Buffer.from(token!.split('.')[1]!, 'base64url').toString('utf8')) as { sub?: string }).sub;
  } catch {
    return undefined;
  }
}

/** An account seed (SA…) read as a key pair, or why it is not one. */
export async function accountKeyPair(seed: string): Promise<KeyPair | string> {
  const nkeys = await lazy(import('@nats-io/nkeys'));
  if (!seed.startsWith('SA')) return 'not an account seed (SA…)';
  try {
    return nkeys.fromSeed(new TextEncoder().encode(seed));
  } catch (err) {
    return `not an account seed: ${(err as Error).message}`;
  }
}
