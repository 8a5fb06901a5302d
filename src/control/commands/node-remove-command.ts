import { NODE_ID_PATTERN } from '../../core/declaration/ids.js';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import { lazy } from '../../core/system/interop.js';
import { Enrolments } from '../../link/enrolment.js';
import { DECLARATIONS_BUCKET } from '../../link/wire.js';
import { readMeshDir } from '../setup/mesh-dir.js';
import { liveUsers, readNodeUsers, withRevoked, writeNodeUsers } from '../setup/node-users.js';
import { describePush, pushComplete, resolverMesh, revokeUsers } from '../setup/account-push.js';
import { output, type CommandContext } from '../../cli/context.js';
import { connectControl, listFlag } from '../../cli/link-flags.js';
import { meshDirOf } from './mesh-defaults.js';

const USER_KEY = /^U[A-Z2-7]{55}$/;
/** JetStream's error for a stream that does not exist. */
const STREAM_NOT_FOUND = 10059;

/**
 * `meshctl node-remove NODE [--user U…]`: takes a host out of the mesh. In this order, each step safe to
 * run again: every NATS user issued to it (as the mesh directory records them, and any `--user` named)
 * is revoked in the account's JWT, signed by the operator and pushed to every server and site, so its
 * connection is closed and refused; its key in the declarations bucket (its slot) is deleted, its
 * history kept; its pinned key is replaced by the record of its removal, which the fleet view shows.
 * Exit 1 when a server did not take the push (said by name; it catches up from the others).
 */
export async function nodeRemoveCommand(ctx: CommandContext): Promise<number> {
  const node = ctx.args[0]!;
  if (!new RegExp(NODE_ID_PATTERN).test(node)) throw usageError(`'${node}' is not a node id ([A-Za-z0-9_-]{1,64})`);
  const named = listFlag(ctx.flags, 'user');
  const bad = named.find((u) => !USER_KEY.test(u));
  if (bad) throw usageError(`--user ${bad} is not a user public key (U…, the subject of the JWT in the host's credentials file)`);
  const dir = meshDirOf(ctx, `'node-remove'`);
  const mesh = resolverMesh(dir, readMeshDir(dir), `node-remove ${node}`);
  const record = readNodeUsers(dir, node);
  const users = [...new Set([...liveUsers(record), ...named])];
  const already = record.users.filter((u) => u.revokedAt !== undefined).map((u) => u.user);
  if (users.length === 0 && already.length === 0) {
    throw refused(`node-remove ${node}: ${dir} records no credentials issued to ${node}, so there is nobody to revoke; nothing was changed`, [
      `credentials issued before meshctl kept them (or from another mesh directory): name the user with --user U… (the subject of the JWT in the host's credentials file)`,
    ]);
  }
  // Revoked first: whatever else fails after, the host can no longer speak to the mesh.
  const { revokedAt, push } = await revokeUsers(dir, mesh, users, ctx.log);
  const at = new Date(revokedAt * 1000).toISOString();
  writeNodeUsers(dir, withRevoked(record, users, at));

  const nc = await connectControl(ctx);
  let removal;
  try {
    removal = await retriedWhileElecting(ctx, async () => {
      const [{ Kvm }, { JetStreamApiError }] = await Promise.all([lazy(import('@nats-io/kv')), lazy(import('@nats-io/jetstream'))]);
      try {
        const kv = await new Kvm(nc).open(DECLARATIONS_BUCKET);
        const slot = await kv.get(node);
        if (slot && slot.operation === 'PUT') await kv.delete(node);
      } catch (err) {
        // No bucket yet (nothing was ever sent): no slot to delete.
        if (!(err instanceof JetStreamApiError && err.code === STREAM_NOT_FOUND)) throw err;
      }
      return (await Enrolments.open(nc)).remove(node, [...already, ...users], at);
    });
  } finally {
    await nc.close();
  }
  const revoked = [...already, ...users];
  output(ctx, { node, revoked, removedAt: removal.at, push }, () =>
    [
      `${node} is removed from the mesh (at ${removal.at}): its user${revoked.length === 1 ? '' : 's'} ${revoked.join(', ')} revoked, its slot deleted, its key no longer trusted`,
      'the account JWT with the revocation, pushed to the servers:',
      ...describePush(push),
    ].join('\n'),
  );
  return pushComplete(push) ? EXIT.ok : EXIT.failed;
}

const ELECTION_WAIT_MS = 30_000;

/**
 * Runs the removal's JetStream steps again while they time out, within a bound: a node is often removed
 * while a server is down, and the streams whose leader it held answer only once the others have elected
 * a new one. Each step is safe to make twice.
 */
async function retriedWhileElecting<T>(ctx: CommandContext, steps: () => Promise<T>): Promise<T> {
  const started = Date.now();
  for (;;) {
    try {
      return await steps();
    } catch (err) {
      if (Date.now() - started > ELECTION_WAIT_MS) throw err;
      ctx.log.debug({ err: (err as Error).message }, 'node-remove: the mesh\'s JetStream did not answer; trying again');
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}
