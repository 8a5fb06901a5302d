import type { NatsConnection } from '@nats-io/transport-node';
import { lazy } from '../system/interop.js';

/** One stored message: the newest the stream holds on its subject. */
export interface LastMessage {
  subject: string;
  data: Uint8Array;
  /** When the server stored it (its own clock, milliseconds since the epoch). */
  storedAtMs: number;
  headers?: Record<string, string[]>;
}

/**
 * The newest message of every subject under `filter` in a stream, in one pass of an ordered consumer
 * that starts at the last message per subject: a fleet of a thousand nodes costs a thousand messages,
 * never the whole history. A stream that does not exist, or holds nothing under the filter, is empty.
 */
export async function readLastPerSubject(nc: NatsConnection, stream: string, filter: string): Promise<LastMessage[]> {
  const { jetstream, DeliverPolicy, JetStreamApiError } = await lazy(import('@nats-io/jetstream'));
  const js = jetstream(nc);
  let consumer;
  try {
    consumer = await js.consumers.get(stream, { filter_subjects: filter, deliver_policy: DeliverPolicy.LastPerSubject });
  } catch (err) {
    // 10059: stream not found (the control side has not created it yet).
    if (err instanceof JetStreamApiError && err.code === 10059) return [];
    throw err;
  }
  const pending = (await consumer.info()).num_pending;
  const out: LastMessage[] = [];
  if (pending === 0) return out;
  const messages = await consumer.consume({ max_messages: Math.min(pending, 1000) });
  try {
    for await (const m of messages) {
      const headers = m.headers ? Object.fromEntries([...m.headers.keys()].map((k) => [k, m.headers!.values(k)])) : undefined;
      out.push({ subject: m.subject, data: m.data, storedAtMs: m.time.getTime(), ...(headers ? { headers } : {}) });
      if (m.info.pending === 0) break;
    }
  } finally {
    void messages.close();
  }
  return out;
}
