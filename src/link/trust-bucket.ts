import type { NatsConnection } from '@nats-io/transport-node';
import type { KV } from '@nats-io/kv';
import { lazy } from '../core/system/interop.js';
import { TRUST_BUCKET, trustKey } from './wire.js';

/**
 * The trust bucket as a host reads it: one version at a time, by a direct get that names its key, the
 * only read a host's credentials allow there. Undefined when the bucket is not there (a mesh made before
 * trust roots, or credentials issued before it: the host keeps what it holds).
 */
export async function openTrustBucket(nc: NatsConnection): Promise<KV | undefined> {
  const { Kvm } = await lazy(import('@nats-io/kv'));
  try {
    const kv = await new Kvm(nc).open(TRUST_BUCKET, { allow_direct: true });
    await kv.get(trustKey(1));
    return kv;
  } catch {
    return undefined;
  }
}

/** The bytes of one version's record, or undefined when the mesh holds no such version. */
export async function readTrustVersion(kv: KV, version: number): Promise<Uint8Array | undefined> {
  const entry = await kv.get(trustKey(version));
  return entry && entry.operation === 'PUT' ? entry.value : undefined;
}

/** Every version the mesh holds, in order from 1, up to the first missing. */
export async function readTrustVersions(kv: KV): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for (let v = 1; ; v++) {
    const value = await readTrustVersion(kv, v);
    if (!value) return out;
    out.push(value);
  }
}
