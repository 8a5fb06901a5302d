import { randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import type { KV } from '@nats-io/kv';
import { lazy } from '../../core/system/interop.js';
import { refused } from '../../core/system/errors.js';
import { openEnvelope, signaturesOf, type Envelope } from '../../core/declaration/envelope.js';
import type { Order } from '../../core/declaration/order.js';
import { PROPOSALS_BUCKET } from '../../link/wire.js';
import { newestOf, type MeshTrust } from './mesh-trust.js';

/**
 * A declaration proposed: numbered and signed by one control key, stored where no host reads, waiting
 * for the signatures the trust root's threshold asks for. Each node's copy is its own envelope (a send
 * to many proposes them together, approved together).
 */
export interface Proposal {
  id: string;
  /** What made it: `send` (one node or many), `rollback`, `reseal`, or `rollout` (its copies are sent wave by wave once approved). */
  made: 'send' | 'rollback' | 'reseal' | 'rollout';
  /** The rollout that waits for it (made `rollout`). */
  rollout?: string;
  file: string;
  proposedAt: string;
  proposedBy: string;
  /** The trust version it was proposed under: approved under another, it is signed again by whoever approves. */
  trustVersion: number;
  copies: Array<{ node: string; envelope: Envelope; mark: Order }>;
}

export async function openProposals(nc: NatsConnection): Promise<KV> {
  const { Kvm } = await lazy(import('@nats-io/kv'));
  return new Kvm(nc).open(PROPOSALS_BUCKET);
}

export const newProposalId = () => `p-${randomBytes(4).toString('hex')}`;

export async function storeProposal(kv: KV, proposal: Proposal): Promise<void> {
  await kv.create(proposal.id, JSON.stringify(proposal));
}

export async function readProposal(kv: KV, id: string): Promise<{ proposal: Proposal; revision: number }> {
  if (!/^p-[0-9a-f]{8}$/.test(id)) throw refused(`'${id}' is not a proposal id (p-…, as meshctl proposals lists them)`);
  const entry = await kv.get(id);
  if (!entry || entry.operation !== 'PUT') throw refused(`no proposal ${id} waits (meshctl proposals lists those that do)`);
  return { proposal: entry.json<Proposal>(), revision: entry.revision };
}

export async function listProposals(kv: KV): Promise<Proposal[]> {
  const out: Proposal[] = [];
  for await (const key of await kv.keys()) {
    const entry = await kv.get(key);
    if (entry?.operation === 'PUT') out.push(entry.json<Proposal>());
  }
  return out.sort((a, b) => a.proposedAt.localeCompare(b.proposedAt));
}

/** The distinct control keys of the newest version whose signatures on a copy verify (a key that signed twice counts once). */
export function validSigners(trust: MeshTrust, envelope: Envelope): string[] {
  const keys = newestOf(trust).control.keys;
  const valid = new Set<string>();
  for (const s of signaturesOf(envelope)) {
    if (keys.includes(s.key) && !valid.has(s.key) && openEnvelope({ payload: envelope.payload, key: s.key, signature: s.signature }).ok) valid.add(s.key);
  }
  return [...valid];
}
