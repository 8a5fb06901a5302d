import type { NatsConnection } from '@nats-io/transport-node';
import { DECLARATIONS_BUCKET, REPORTS_STREAM, REPORTS_SUBJECTS } from './wire.js';
import { lazy } from '../system/interop.js';

/** The control side creates the bucket and the stream when they are missing; hosts only read and publish. */
export async function ensureWire(nc: NatsConnection, options: { replicas?: number } = {}): Promise<void> {
  const replicas = options.replicas ?? 1;
  const [{ Kvm }, { jetstreamManager }] = await Promise.all([lazy(import('@nats-io/kv')), lazy(import('@nats-io/jetstream'))]);
  await new Kvm(nc).create(DECLARATIONS_BUCKET, { history: 5, replicas });
  const jsm = await jetstreamManager(nc);
  try {
    await jsm.streams.info(REPORTS_STREAM);
  } catch {
    await jsm.streams.add({ name: REPORTS_STREAM, subjects: [REPORTS_SUBJECTS], duplicate_window: 2 * 60 * 1_000_000_000, num_replicas: replicas });
  }
}
