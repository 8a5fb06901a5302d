import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import { lazy } from '../core/system/interop.js';

/** One message of a stream, as a reader of its whole subject gets it. */
export interface StoredMessage {
  subject: string;
  streamSequence: number;
  /** When the stream stored it (ISO). */
  storedAt: string;
  bytes: Uint8Array;
  headers?: MsgHdrs;
}

/**
 * Every message the stream holds on `filter` when the read begins, oldest first: one ordered consumer,
 * read until the count it held at its start is in (a subject still written to never lets "nothing
 * pending" come). A stream not made yet holds none.
 */
export async function readSubject(nc: NatsConnection, stream: string, filter: string): Promise<StoredMessage[]> {
  const { jetstream, DeliverPolicy, JetStreamApiError } = await lazy(import('@nats-io/jetstream'));
  let consumer;
  try {
    consumer = await jetstream(nc).consumers.get(stream, { filter_subjects: filter, deliver_policy: DeliverPolicy.All });
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === 10059) return [];
    throw err;
  }
  const held = (await consumer.info()).num_pending;
  const read: StoredMessage[] = [];
  if (held === 0) return read;
  const messages = await consumer.consume({ max_messages: 500 });
  for await (const m of messages) {
    read.push({ subject: m.subject, streamSequence: m.seq, storedAt: new Date(m.info.timestampNanos / 1e6).toISOString(), bytes: m.data, ...(m.headers ? { headers: m.headers } : {}) });
    if (read.length >= held || m.info.pending === 0) break;
  }
  void messages.close();
  return read;
}
