import { readFileSync, writeFileSync } from 'node:fs';
import { hostPermissions } from '../../link/permissions.js';
import { NODE_ID_PATTERN } from '../../declaration/ids.js';
import { EXIT, refused, usageError } from '../../system/errors.js';
import { accountKeyPair, issueCreds, userOfCreds, type KeyPair } from '../../setup/accounts.js';
import { stringFlag, type CommandContext } from '../context.js';

/**
 * `meshctl node-creds NODE --account-key FILE [--account A…] [--out FILE]`: a credentials file (user
 * JWT and seed) for one host, signed with the mesh's NATS account key (or one of its signing keys),
 * allowing exactly what the wire gives a host and nothing else (docs/wire.md, "What a host may do").
 */
export async function nodeCredsCommand(ctx: CommandContext): Promise<number> {
  const node = ctx.args[0]!;
  if (!new RegExp(NODE_ID_PATTERN).test(node)) throw usageError(`'${node}' is not a node id ([A-Za-z0-9_-]{1,64})`);
  const keyFile = stringFlag(ctx.flags, 'account-key');
  if (!keyFile) throw usageError("'node-creds' needs --account-key FILE (the account's seed SA…, or one of its signing keys)");
  const account = stringFlag(ctx.flags, 'account');
  if (account !== undefined && !/^A[A-Z2-7]{55}$/.test(account)) throw usageError(`--account ${account} is not an account public key (A…)`);
  const signer = await readAccountSeed(keyFile);
  const forAccount = account ?? signer.getPublicKey();
  const text = await issueCreds({ name: `mesh-host ${node}`, signer, account: forAccount, permissions: hostPermissions(node) });
  const creds = Buffer.from(text);
  const out = stringFlag(ctx.flags, 'out');
  if (out) {
    try {
      writeFileSync(out, creds, { mode: 0o600, flag: 'wx' });
    } catch (err) {
      throw refused(`${out}: ${(err as NodeJS.ErrnoException).code === 'EEXIST' ? 'exists; credentials are never overwritten' : (err as Error).message}`);
    }
    const summary = { node, user: userOfCreds(text), account: forAccount, creds: out };
    ctx.print(ctx.json ? JSON.stringify(summary) : `credentials for ${node} (user public key ${summary.user}) written to ${out} (keep it secret; give it to that host only)`);
  } else ctx.print(creds.toString('utf8'));
  return EXIT.ok;
}

async function readAccountSeed(path: string): Promise<KeyPair> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (err) {
    throw refused(`${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const pair = await accountKeyPair(text);
  if (typeof pair === 'string') throw refused(`${path} is ${pair}`);
  return pair;
}
