import type { NatsConnection } from '@nats-io/transport-node';
import type { KV } from '@nats-io/kv';
import type { Rollout } from '../fleet/rollout.js';
import { ROLLOUTS_BUCKET } from '../../link/wire.js';
import { lazy } from '../../core/system/interop.js';
import type { RolloutSummary, RolloutView } from '../page/page-wire.js';
import { resourceView } from './node.js';

/** The key of the bucket that is not a rollout: which rollout holds which node. */
const CLAIMS = 'claims';

/** The bucket mesh_rollouts, opened to read (never made: a mesh that never rolled out has none); null when missing. */
async function rolloutsBucket(nc: NatsConnection): Promise<KV | null> {
  const { Kvm } = await lazy(import('@nats-io/kv'));
  return new Kvm(nc).open(ROLLOUTS_BUCKET).then(
    async (kv) => ((await kv.status().then(() => true, () => false)) ? kv : null),
    () => null,
  );
}

async function readOne(kv: KV, id: string): Promise<Rollout | null> {
  const entry = await kv.get(id);
  if (!entry || entry.operation !== 'PUT') return null;
  const value = entry.json<Rollout>();
  return typeof value === 'object' && value !== null && value.id === id && Array.isArray(value.waves) ? value : null;
}

/** Every rollout, newest first, a line each. */
export async function rolloutList(nc: NatsConnection): Promise<RolloutSummary[]> {
  const kv = await rolloutsBucket(nc);
  if (!kv) return [];
  const ids: string[] = [];
  for await (const key of await kv.keys()) if (key !== CLAIMS) ids.push(key);
  const read = await Promise.all(ids.map((id) => readOne(kv, id)));
  return read
    .flatMap((r) => (r ? [r] : []))
    .sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1))
    .map((r) => ({ id: r.id, file: r.file, status: r.status, wave: r.wave, waves: r.waves.length, nodes: r.waves.flat().length, halt: r.halt ?? null, createdAt: r.createdAt, updatedAt: r.updatedAt }));
}

/** One rollout as its page shows it; null when the mesh keeps none by that id. */
export async function rolloutView(nc: NatsConnection, id: string, nowMs: number): Promise<RolloutView | null> {
  const kv = await rolloutsBucket(nc);
  const rollout = kv ? await readOne(kv, id) : null;
  if (!rollout) return null;
  const { declaration, version: _version, ...rest } = rollout;
  const resources = Array.isArray(declaration.resources) ? declaration.resources.map(resourceView) : [];
  return { ...rest, nowMs, mode: String(declaration.mode ?? 'converged'), resources };
}
