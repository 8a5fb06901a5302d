import type { NatsConnection } from '@nats-io/transport-node';
import type { Rollout, SignedCopy } from '../fleet/rollout.js';
import { FleetListener } from '../fleet/rollout-listen.js';
import { RolloutStore } from '../fleet/rollout-store.js';
import { fleetReportVerifier, readEnrolments } from '../fleet/trust.js';
import { EMPTY_VALUES } from '../fleet/node-values.js';
import { isRevisionConflict } from '../../link/revision.js';
import { refused } from '../../core/system/errors.js';
import type { CommandContext } from '../../cli/context.js';
import type { MeshTrust } from './mesh-trust.js';
import { openDeclarations, readNodeRecords } from './numbering.js';
import { propose, signOnce, unchangedMark, type SignOnce } from './propose.js';
import { newProposalId, openProposals, type Proposal } from './proposals.js';
import { copiesOf, readOrRefuse, run, takenUp, type Opened } from './rollout-drive.js';
import { enrolledCurveKeys, Sealer } from './sealing.js';

/**
 * A rollout under a trust root that needs more than one signature: every copy is numbered and signed by
 * the key that starts it, and the rollout waits, proposed, for one approval that covers every wave.
 * Nothing is sent before it. A rollout resumed after a failure proposes the copies it must number anew.
 */

/** Who signs a rollout, and the trust root that says how many must: above one, the rollout is proposed. */
export interface RolloutSigner {
  keyFile: string;
  seed: string;
  trust: MeshTrust | undefined;
}

/**
 * The rollout left proposed: each node's copy signed by this key (a node whose key holds the declaration
 * already is marked unchanged instead), the record written `proposed` naming the proposal, then the
 * proposal stored. Nothing is sent. A rollout with nothing to sign runs at once.
 */
export async function proposeRollout(ctx: CommandContext, nc: NatsConnection, store: RolloutStore, signer: RolloutSigner & { trust: MeshTrust }, rollout: Rollout, revision: number, once: SignOnce, nodes: string[]): Promise<number> {
  const signed: Record<string, SignedCopy> = { ...rollout.signed };
  const copies: Proposal['copies'] = [];
  for (const node of nodes) {
    const unchanged = rollout.nodes[node]?.again ? undefined : await unchangedMark(once, node);
    if (unchanged) signed[node] = { unchanged };
    else copies.push(await signOnce(once, node));
  }
  if (copies.length === 0) {
    const kept = { ...rollout, status: 'running' as const, signed };
    const rev = await store.write(kept, revision);
    const [kv, records] = await Promise.all([openDeclarations(nc), readNodeRecords(nc)]);
    return run(ctx, nc, { store, kv, records, seed: signer.seed, enrolments: readEnrolments(nc), values: EMPTY_VALUES }, kept, rev, revision === 0 ? 'started' : 'resumed');
  }
  const id = newProposalId();
  const { owner: _, ...unowned } = rollout;
  await store.write({ ...unowned, status: 'proposed', proposal: id, signed, updatedAt: ctx.clock.now().toISOString() }, revision);
  return propose(ctx, nc, signer.trust, rollout.file, signer.keyFile, copies, { made: 'rollout', rollout: rollout.id, id });
}

/**
 * `meshctl approve` of a rollout's proposal, once its copies carry the trust root's threshold: they are
 * kept in the rollout's record, which runs (or runs on, after a resume), driven by this meshctl.
 */
export async function approveRollout(ctx: CommandContext, nc: NatsConnection, proposal: Proposal, seed: string): Promise<number> {
  const store = await RolloutStore.open(nc);
  const { rollout, revision } = await readOrRefuse(store, proposal.rollout!);
  if (rollout.status !== 'proposed' || rollout.proposal !== proposal.id) {
    await (await openProposals(nc)).delete(proposal.id);
    throw refused(`rollout ${rollout.id} is ${rollout.status}${rollout.proposal ? ` and waits for ${rollout.proposal}` : ''}, not for ${proposal.id}: the proposal is withdrawn; nothing was sent`);
  }
  const signed: Record<string, SignedCopy> = { ...rollout.signed };
  for (const c of proposal.copies) signed[c.node] = { envelope: c.envelope, mark: c.mark };
  const { proposal: _, ...rest } = rollout;
  const approved: Rollout = { ...rest, status: 'running', signed, updatedAt: ctx.clock.now().toISOString() };
  let rev: number;
  try {
    rev = await store.write(approved, revision);
  } catch (err) {
    if (isRevisionConflict(err)) throw refused(`rollout ${rollout.id} changed while it was approved (aborted?): run meshctl approve ${proposal.id} again`);
    throw err;
  }
  await (await openProposals(nc)).delete(proposal.id);
  await store.claim(rollout.id, Object.keys(rollout.nodes));
  const enrolments = readEnrolments(nc);
  const [kv, records] = await Promise.all([openDeclarations(nc), readNodeRecords(nc)]);
  return run(ctx, nc, { store, kv, records, seed, enrolments, values: EMPTY_VALUES }, approved, rev, rollout.wave === 0 && Object.values(rollout.nodes).every((p) => p.phase === 'pending') ? 'started' : 'resumed');
}

/**
 * A rollout approved under a threshold above 1, resumed: nodes that failed or were refused need a copy
 * under a new number, which one key cannot sign alone, so those copies are signed and proposed and the
 * rollout waits for approval again; with none to sign again it runs on at once on the copies approved.
 */
export async function resumeSigned(ctx: CommandContext, nc: NatsConnection, o: Opened, signer: RolloutSigner & { trust: MeshTrust }, rollout: Rollout, revision: number): Promise<number> {
  if (rollout.status !== 'halted') return run(ctx, nc, o, rollout, revision, 'resumed');
  const listener = new FleetListener(nc, fleetReportVerifier(o.enrolments), new Set(Object.keys(rollout.nodes)));
  await listener.start();
  let taken: Rollout;
  try {
    taken = await takenUp(listener, rollout, ctx.clock.now().getTime());
  } finally {
    listener.close();
  }
  const again = Object.entries(taken.nodes).filter(([, p]) => p.again).map(([n]) => n);
  if (again.length === 0) return run(ctx, nc, o, taken, revision, 'resumed');
  const copyOf = await copiesOf(taken, o);
  const once: SignOnce = { file: taken.file, copyOf, records: o.records, epochFlag: taken.epoch, seed: signer.seed, sealer: new Sealer(signer.seed, enrolledCurveKeys(() => o.enrolments)) };
  return proposeRollout(ctx, nc, o.store, signer, taken, revision, once, again);
}

