import type { NatsConnection } from '@nats-io/transport-node';
import type { KV } from '@nats-io/kv';
import { chooseReplicas } from '../../link/control.js';
import { isRevisionConflict } from '../../link/revision.js';
import { ROLLOUTS_BUCKET } from '../../link/wire.js';
import { whileClusterForms } from '../../link/jetstream-ready.js';
import { lazy } from '../../core/system/interop.js';
import { refused } from '../../core/system/errors.js';
import type { Rollout } from './rollout.js';

/**
 * The bucket mesh_rollouts: one key a rollout (its id), holding the whole record, written with
 * compare-and-set so that two meshctl never drive one rollout; and the key `claims`, which names for
 * each node the unfinished rollout that holds it, so that a second rollout for the same nodes is refused
 * (also with compare-and-set: two rollouts started at once cannot both claim a node).
 */
const CLAIMS = 'claims';
const ATTEMPTS = 8;

export const UNFINISHED = new Set<Rollout['status']>(['proposed', 'running', 'halted']);

export class RolloutStore {
  private constructor(private readonly kv: KV) {}

  static async open(nc: NatsConnection): Promise<RolloutStore> {
    const { Kvm } = await lazy(import('@nats-io/kv'));
    return new RolloutStore(await whileClusterForms(() => new Kvm(nc).create(ROLLOUTS_BUCKET, { history: 5, replicas: chooseReplicas(nc).replicas })));
  }

  async read(id: string): Promise<{ rollout: Rollout; revision: number } | undefined> {
    const entry = await this.kv.get(id);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return { rollout: entry.json<Rollout>(), revision: entry.revision };
  }

  /** The record written only if nobody wrote it since `revision` (0: only if it does not exist): the new revision. */
  async write(rollout: Rollout, revision: number): Promise<number> {
    const bytes = JSON.stringify(rollout);
    return revision === 0 ? this.kv.create(rollout.id, bytes) : this.kv.update(rollout.id, bytes, revision);
  }

  /** Every rollout the bucket holds, newest first. */
  async list(): Promise<Rollout[]> {
    const ids: string[] = [];
    for await (const key of await this.kv.keys()) if (key !== CLAIMS) ids.push(key);
    const read = await Promise.all(ids.map((id) => this.read(id)));
    return read.flatMap((r) => (r ? [r.rollout] : [])).sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1));
  }

  /**
   * Claims the nodes for rollout `id`, or refuses naming the unfinished rollout that holds any of them.
   * A claim left by a rollout that has finished or was aborted no longer holds its node.
   */
  async claim(id: string, nodes: string[]): Promise<void> {
    await this.changeClaims(async (claims) => {
      const holders = new Map<string, string[]>();
      for (const node of nodes) {
        const holder = claims[node];
        if (holder && holder !== id) holders.set(holder, [...(holders.get(holder) ?? []), node]);
      }
      for (const [holder, held] of holders) {
        const other = (await this.read(holder))?.rollout;
        if (other && UNFINISHED.has(other.status)) throw overlap(other, held);
      }
      for (const node of nodes) claims[node] = id;
    });
  }

  /** Gives back every node rollout `id` holds. */
  async release(id: string): Promise<void> {
    await this.changeClaims(async (claims) => {
      for (const [node, holder] of Object.entries(claims)) if (holder === id) delete claims[node];
    });
  }

  private async changeClaims(change: (claims: Record<string, string>) => Promise<void>): Promise<void> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const entry = await this.kv.get(CLAIMS);
      const live = entry?.operation === 'PUT';
      const claims = live ? entry.json<Record<string, string>>() : {};
      await change(claims);
      try {
        if (entry) await this.kv.update(CLAIMS, JSON.stringify(claims), entry.revision);
        else await this.kv.create(CLAIMS, JSON.stringify(claims));
        return;
      } catch (err) {
        if (!isRevisionConflict(err)) throw err;
      }
    }
    throw refused(`the claims of ${ROLLOUTS_BUCKET} changed between every read and write (${ATTEMPTS} attempts): other rollouts are starting; try again`);
  }
}

function overlap(other: Rollout, held: string[]) {
  const names = `${held.slice(0, 5).join(', ')}${held.length > 5 ? ` and ${held.length - 5} more` : ''}`;
  const where = other.status === 'proposed' ? `proposed, waiting for approval (meshctl approve ${other.proposal ?? ''})` : other.status === 'halted' ? `halted at wave ${other.wave + 1} of ${other.waves.length}` : `running, wave ${other.wave + 1} of ${other.waves.length}`;
  return refused(`${names} ${held.length === 1 ? 'is' : 'are'} in rollout ${other.id} (${where}, ${other.file}): a second rollout for the same nodes is refused while it runs; nothing was sent`, [
    `resume it with meshctl rollout --resume ${other.id}, or stop it with meshctl rollout --abort ${other.id}`,
  ]);
}
