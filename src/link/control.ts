import type { NatsConnection } from '@nats-io/transport-node';
import { DECLARATIONS_BUCKET, HEARTBEAT_SUBJECTS, HEARTBEATS_STREAM, REPORTS_STREAM, REPORTS_SUBJECTS } from './wire.js';
import { lazy } from '../system/interop.js';

/** The control side creates the bucket and the streams when they are missing; hosts only read and publish. */
export async function ensureWire(nc: NatsConnection, options: { replicas?: number } = {}): Promise<void> {
  const replicas = options.replicas ?? 1;
  const [{ Kvm }, { jetstreamManager }] = await Promise.all([lazy(import('@nats-io/kv')), lazy(import('@nats-io/jetstream'))]);
  await new Kvm(nc).create(DECLARATIONS_BUCKET, { history: 5, replicas });
  const jsm = await jetstreamManager(nc);
  const ensure = async (config: Parameters<typeof jsm.streams.add>[0]) => {
    try {
      await jsm.streams.info(config.name);
    } catch {
      await jsm.streams.add({ num_replicas: replicas, ...config });
    }
  };
  await ensure({ name: REPORTS_STREAM, subjects: [REPORTS_SUBJECTS], duplicate_window: 2 * 60 * 1_000_000_000 });
  // Heartbeats are plain publishes; this stream keeps only the newest of each node, so the fleet view
  // knows every node's last beat at once instead of listening for three intervals.
  await ensure({ name: HEARTBEATS_STREAM, subjects: [HEARTBEAT_SUBJECTS], max_msgs_per_subject: 1 });
}
