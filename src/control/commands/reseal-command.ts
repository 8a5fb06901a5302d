import { describeOrder } from '../../core/declaration/order.js';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import { stringFlag, type CommandContext } from '../../cli/context.js';
import { Enrolments } from '../../link/enrolment.js';
import { readSeed } from './keys-command.js';
import { connectWire } from './mesh-flags.js';
import { needsApproval, trustForSigning } from './mesh-trust.js';
import { propose } from './propose.js';
import type { Envelope } from '../../core/declaration/envelope.js';
import { checkPayloadSize, numberAndSign, openDeclarations, putNumbered, readNodeRecord, refuseUnlessNewer, sameDeclaration, type NodeRecord } from './numbering.js';
import { enrolledCurveKeys, Sealer } from './sealing.js';

/** A reseal that finds every value of the node's key sealed to its current curve key already: nothing to put. */
class AlreadySealed extends Error {}

/**
 * `meshctl reseal NODE --key KEY`: the declaration the node's key holds, with every sealed value opened
 * (meshctl sealed it, with the same operator key) and sealed again to the node's curve key as recorded
 * now (its latest report's, when the host made a new one), numbered after it and put. Run it when a host
 * has a new curve key (its state directory made anew, or its key file removed): values sealed to the old
 * key no longer open there, and the host refuses them, naming each resource.
 */
export async function resealCommand(ctx: CommandContext): Promise<number> {
  const node = ctx.args[0]!;
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(node)) throw usageError(`'${node}' is not a node id`);
  const key = stringFlag(ctx.flags, 'key');
  if (!key) throw usageError("'reseal' needs --key FILE (the operator key the values were sealed and signed with)");
  const seed = readSeed(key);
  const nc = await connectWire(ctx);
  try {
    const trust = await trustForSigning(nc, ctx, key, seed);
    const kv = await openDeclarations(nc);
    let enrolments: Promise<Enrolments> | undefined;
    const sealer = new Sealer(seed, enrolledCurveKeys(() => (enrolments ??= Enrolments.open(nc))));
    const source = `the key of ${node}`;
    /** The held declaration with its values sealed again to the node's curve key, numbered after it and signed. */
    const resealed = async (record: NodeRecord) => {
      const held = record.key?.declaration;
      if (!held) throw refused(`${source} holds no declaration meshctl can read: nothing to reseal; send the declaration file (it is sealed before it is sent)`);
      const { sequence: _, ...unnumbered } = held;
      const sealed = await sealer.sealFor(unnumbered, node, record);
      if (sealed === unnumbered || sameDeclaration(held, sealed)) throw new AlreadySealed();
      const made = await numberAndSign(sealed, Buffer.from(JSON.stringify(sealed)), source, node, record, undefined, seed);
      refuseUnlessNewer(made.mark, record, source, node);
      checkPayloadSize(nc, made.bytes.length, `the resealed declaration for ${node}`);
      return made;
    };
    try {
      if (needsApproval(trust)) {
        // Signed once and proposed: the hosts take it when a second control key approves.
        const made = await resealed(await readNodeRecord(nc, kv, node));
        return await propose(ctx, nc, trust, source, key, [{ node, envelope: JSON.parse(Buffer.from(made.bytes).toString('utf8')) as Envelope, mark: made.mark }], { made: 'reseal' });
      }
      const put = await putNumbered(nc, kv, node, resealed, await readNodeRecord(nc, kv, node));
      ctx.print(ctx.json ? JSON.stringify({ node, outcome: 'resealed', ...put.mark, revision: put.revision }) : `resealed for ${node}'s curve key: ${describeOrder(put.mark)} (revision ${put.revision})`);
    } catch (err) {
      if (!(err instanceof AlreadySealed)) throw err;
      ctx.print(ctx.json ? JSON.stringify({ node, outcome: 'unchanged' }) : `${node}: every sealed value of its key is sealed to its current curve key already; nothing was put`);
    }
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}
