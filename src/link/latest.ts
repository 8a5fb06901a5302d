import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import { lazy } from '../system/interop.js';

/** The newest message of one subject, as the stream holds it. */
export interface LatestMessage {
  subject: string;
  /** The stream's sequence of this message. */
  streamSequence: number;
  /** When the stream stored it (ISO). */
  storedAt: string;
  bytes: Uint8Array;
  /** Its headers as stored (a report's signature travels in them). */
  headers?: MsgHdrs;
}

/**
 * The newest message of every subject under `filter` in one read: one ordered consumer that starts at
 * the last message per subject, read until the messages it held when it was made are in (a fleet that keeps
 * beating never lets "nothing pending" come, so the read is bounded by that count). Over a fleet this is one consumer and
 * one message a node, whatever the stream's depth: the fleet view's read, and the latest report a node
 * made (what `meshctl send` numbers after).
 */
export async function latestPerSubject(nc: NatsConnection, stream: string, filter: string, options: { timeoutMs?: number } = {}): Promise<Map<string, LatestMessage>> {
  const { jetstream, DeliverPolicy } = await lazy(import('@nats-io/jetstream'));
  const consumer = await jetstream(nc).consumers.get(stream, { filter_subjects: filter, deliver_policy: DeliverPolicy.LastPerSubject });
  const latest = new Map<string, LatestMessage>();
  const held = (await consumer.info()).num_pending;
  if (held === 0) return latest;
  const messages = await consumer.consume({ max_messages: 1000 });
  let read = 0;
  const timer = setTimeout(() => void messages.close(), options.timeoutMs ?? 30_000);
  try {
    for await (const m of messages) {
      latest.set(m.subject, { subject: m.subject, streamSequence: m.seq, storedAt: m.time.toISOString(), bytes: m.data, ...(m.headers ? { headers: m.headers } : {}) });
      if (++read >= held || m.info.pending === 0) break;
    }
  } finally {
    clearTimeout(timer);
    void messages.close();
  }
  return latest;
}
