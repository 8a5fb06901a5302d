import { readFileSync, writeFileSync } from 'node:fs';
import { hostPermissions } from '../../link/permissions.js';
import { NODE_ID_PATTERN } from '../../core/declaration/ids.js';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import { accountKeyPair, issueCreds, userOfCreds, type KeyPair } from '../setup/nats-accounts.js';
import { readMeshDir } from '../setup/mesh-dir.js';
import { liveUsers, readNodeUsers, withRevoked, writeNodeUsers } from '../setup/node-users.js';
import { describePush, pushComplete, resolverMesh, revokeUsers } from '../setup/account-push.js';
import type { PushResult } from '../setup/claims-push.js';
import { stringFlag, type CommandContext } from '../../cli/context.js';
import { givenMeshDir, meshDirOf } from './mesh-defaults.js';

/**
 * `meshctl node-creds NODE --account-key FILE [--account A…] [--out FILE] [--rotate]`: a credentials
 * file (user JWT and seed) for one host, signed with the mesh's NATS account key (or one of its signing
 * keys), allowing exactly what the wire gives a host and nothing else (docs/wire.md, "What a host may
 * do"). With a mesh directory, the user is recorded in it (whom `node-remove` revokes). `--rotate`
 * revokes every user the node had before, once the new credentials are written: pushed to every
 * server, the old credentials are refused within seconds.
 */
export async function nodeCredsCommand(ctx: CommandContext): Promise<number> {
  const node = ctx.args[0]!;
  if (!new RegExp(NODE_ID_PATTERN).test(node)) throw usageError(`'${node}' is not a node id ([A-Za-z0-9_-]{1,64})`);
  const keyFile = stringFlag(ctx.flags, 'account-key');
  if (!keyFile) throw usageError("'node-creds' needs --account-key FILE (the account's seed SA…, or one of its signing keys)");
  const account = stringFlag(ctx.flags, 'account');
  if (account !== undefined && !/^A[A-Z2-7]{55}$/.test(account)) throw usageError(`--account ${account} is not an account public key (A…)`);
  const rotate = ctx.flags.rotate === true;
  if (rotate && !stringFlag(ctx.flags, 'out')) throw usageError("'node-creds --rotate' needs --out FILE: the new credentials are written there before the old ones are revoked");
  const dir = rotate ? meshDirOf(ctx, `'node-creds --rotate'`) : givenMeshDir(ctx);
  const mesh = dir === undefined ? undefined : readMeshDir(dir);
  // Refused before anything is issued: a rotation that could not revoke would leave both working.
  const pushTo = rotate ? resolverMesh(dir!, mesh!, `node-creds ${node} --rotate`) : undefined;
  const record = dir === undefined ? undefined : readNodeUsers(dir, node);
  const before = record ? liveUsers(record) : [];
  if (rotate && before.length === 0) throw refused(`node-creds ${node} --rotate: ${dir} records no credentials issued to ${node}; nothing to rotate`, [`issue its first ones without --rotate; credentials issued before meshctl kept them are revoked with meshctl node-remove ${node} --user U…`]);

  const signer = await readAccountSeed(keyFile);
  const forAccount = account ?? signer.getPublicKey();
  const text = await issueCreds({ name: `mesh-host ${node}`, signer, account: forAccount, permissions: hostPermissions(node) });
  const user = userOfCreds(text)!;
  const out = stringFlag(ctx.flags, 'out');
  if (out) {
    try {
      writeFileSync(out, text, { mode: 0o600, flag: 'wx' });
    } catch (err) {
      throw refused(`${out}: ${(err as NodeJS.ErrnoException).code === 'EEXIST' ? 'exists; credentials are never overwritten' : (err as Error).message}`);
    }
  }
  const issuedAt = new Date().toISOString();
  if (dir !== undefined) writeNodeUsers(dir, { node, users: [...record!.users, { user, issuedAt }] });

  let rotated: { revoked: string[]; push: PushResult } | undefined;
  if (pushTo) {
    const { revokedAt, push } = await revokeUsers(dir!, pushTo, before, ctx.log);
    writeNodeUsers(dir!, withRevoked(readNodeUsers(dir!, node), before, new Date(revokedAt * 1000).toISOString()));
    rotated = { revoked: before, push };
  }

  if (!out) {
    ctx.print(text);
    return EXIT.ok;
  }
  const summary = { node, user, account: forAccount, creds: out, ...(rotated ? { revoked: rotated.revoked, push: rotated.push } : {}) };
  const words = [
    `credentials for ${node} (user public key ${user}) written to ${out} (keep it secret; give it to that host only)`,
    ...(rotated ? [`its earlier user${rotated.revoked.length === 1 ? '' : 's'} ${rotated.revoked.join(', ')} revoked, pushed to the servers:`, ...describePush(rotated.push), `put ${out} where the host's configuration names its credentials (mesh-host reads it again as it reconnects)`] : []),
  ];
  ctx.print(ctx.json ? JSON.stringify(summary) : words.join('\n'));
  return rotated && !pushComplete(rotated.push) ? EXIT.failed : EXIT.ok;
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
