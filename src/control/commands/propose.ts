import { describeOrder, epochIn } from '../../core/declaration/order.js';
import type { NatsConnection } from '@nats-io/transport-node';
import { EXIT } from '../../core/system/errors.js';
import { output, type CommandContext } from '../../cli/context.js';
import { signaturesOf, type Envelope } from '../../core/declaration/envelope.js';
import type { Order } from '../../core/declaration/order.js';
import { numberAndSign, sameDeclaration, type NodeRecord } from './numbering.js';
import { newestOf, type MeshTrust } from './mesh-trust.js';
import { newProposalId, openProposals, storeProposal, validSigners, type Proposal } from './proposals.js';
import type { Sealer } from './sealing.js';

/** What a copy signed once is made from: the node's declaration, what the mesh holds for it, the file named in refusals. */
export interface SignOnce {
  file: string;
  copyOf: (node: string) => Record<string, unknown>;
  records: Map<string, NodeRecord>;
  epochFlag: number | undefined;
  seed: string;
  sealer: Sealer;
}

/** One node's copy (its values sealed) numbered after what the mesh holds for it and signed by one key: the first signature of a proposal. */
export async function signOnce(s: SignOnce, node: string): Promise<{ node: string; envelope: Envelope; mark: Order }> {
  const record = s.records.get(node) ?? {};
  const copy = await s.sealer.sealFor({ ...s.copyOf(node), node }, node, record);
  const made = await numberAndSign(copy, Buffer.from(JSON.stringify(copy)), s.file, node, record, s.epochFlag, s.seed);
  return { node, envelope: JSON.parse(Buffer.from(made.bytes).toString('utf8')) as Envelope, mark: made.mark };
}

/** The node's key holds this very declaration (bar its number): a rollout has nothing to send it. */
export async function unchangedMark(s: SignOnce, node: string): Promise<Order | undefined> {
  const record = s.records.get(node) ?? {};
  const held = record.key?.declaration;
  if (!held || !record.key?.mark) return undefined;
  const sealed = await s.sealer.sealFor({ ...s.copyOf(node), node }, node, record);
  const epoch = s.epochFlag ?? epochIn(sealed) ?? record.key.mark.epoch;
  return sameDeclaration(held, epoch === undefined ? sealed : { ...sealed, epoch }) ? record.key.mark : undefined;
}

/** What a proposal was made by, and for a rollout its id (and the proposal's id, named in the rollout's record first). */
export interface ProposeAs {
  made: Proposal['made'];
  rollout?: string;
  id?: string;
}

const listed = (copies: Proposal['copies']) => `${copies.slice(0, 8).map((c) => `${c.node} (${describeOrder(c.mark)})`).join(', ')}${copies.length > 8 ? `, … (${copies.length - 8} more)` : ''}`;

/**
 * Under a trust root that needs more than one signature, a send signs once and stores the copies as a
 * proposal, where no host reads: nothing is delivered until `meshctl approve ID` adds the signatures.
 */
export async function propose(ctx: CommandContext, nc: NatsConnection, trust: MeshTrust, file: string, by: string, copies: Proposal['copies'], as: ProposeAs = { made: 'send' }): Promise<number> {
  const newest = newestOf(trust);
  const proposal: Proposal = { id: as.id ?? newProposalId(), made: as.made, ...(as.rollout ? { rollout: as.rollout } : {}), file, proposedAt: new Date().toISOString(), proposedBy: signaturesOf(copies[0]!.envelope)[0]!.key, trustVersion: newest.version, copies };
  await storeProposal(await openProposals(nc), proposal);
  const have = Math.min(...copies.map((c) => validSigners(trust, c.envelope).length));
  const what = as.rollout ? `rollout ${as.rollout}` : as.made;
  output(ctx, { id: proposal.id, proposed: true, made: as.made, ...(as.rollout ? { rollout: as.rollout } : {}), nodes: copies.map((c) => ({ node: c.node, ...c.mark })), signatures: have, needed: newest.control.threshold }, () =>
    [
      `proposed ${proposal.id} (${what}): ${listed(copies)}, signed by ${by}`,
      `  trust version ${newest.version} needs ${newest.control.threshold} distinct control keys: nothing is ${as.rollout ? 'sent' : 'delivered'} until ${newest.control.threshold - have} more approve${as.rollout ? ' (one approval covers every wave)' : ''}`,
      `  meshctl approve ${proposal.id} --key ANOTHER-CONTROL-KEY`,
    ].join('\n'),
  );
  return EXIT.ok;
}
