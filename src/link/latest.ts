import type { Msg, MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import { lazy } from '../core/system/interop.js';

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

/** Messages asked for in one pull, and their bytes: a fleet of large reports comes in bounded steps. */
const PULL_BATCH = 1000;
const PULL_MAX_BYTES = 16 << 20;

/**
 * The newest message of every subject under `filter` in one read: one pull consumer that starts at the
 * last message per subject, read until the messages it held when it was made are in (a fleet that keeps
 * beating never lets "nothing pending" come, so the read is bounded by that count). Over a fleet this is
 * one consumer and one message a node, whatever the stream's depth: the fleet view's read, the enrolments
 * of every node, and the latest report a node made (what `meshctl send` numbers after).
 *
 * Made by hand on a plain subscription rather than through the client's ordered consumer: that costs a
 * stream lookup, a consumer lookup and a wrapper per message, a third of the fleet view's time at a
 * thousand nodes. The consumer is deleted when the read is done (without waiting for the answer) and
 * would expire on its own a minute later anyway. `onMessage` hears each message as it comes: work on it
 * can begin while the read goes on (a newer one of the same subject may still follow).
 */
export async function latestPerSubject(nc: NatsConnection, stream: string, filter: string, options: { timeoutMs?: number; onMessage?: (message: LatestMessage) => void } = {}): Promise<Map<string, LatestMessage>> {
  const [{ jetstreamManager, AckPolicy, DeliverPolicy }, { createInbox, nanos }] = await Promise.all([lazy(import('@nats-io/jetstream')), lazy(import('@nats-io/transport-node'))]);
  const latest = new Map<string, LatestMessage>();
  const inbox = createInbox();
  const timeoutMs = options.timeoutMs ?? 30_000;
  let deliver: ((m: Msg) => void) | undefined;
  // Subscribed before the consumer exists: no delivery can come before anyone listens.
  const sub = nc.subscribe(inbox, {
    callback: (err, m) => {
      if (!err) deliver?.(m);
    },
  });
  const name = `latest_${inbox.slice(inbox.lastIndexOf('.') + 1)}`;
  try {
    // The consumer's creation waits as long as the read: at ten thousand nodes on a loaded server it
    // took longer than the client's 5 s, and the fleet view failed with the messages all there.
    const jsm = await jetstreamManager(nc, { checkAPI: false, timeout: timeoutMs });
    const info = await addConsumer(() => jsm.consumers.add(stream, {
      name,
      filter_subject: filter,
      deliver_policy: DeliverPolicy.LastPerSubject,
      ack_policy: AckPolicy.None,
      max_deliver: 1,
      mem_storage: true,
      // As many replicas as the stream (the server's default): a one-replica consumer is placed on one of
      // the stream's servers at random, a server killed a moment ago included (nats-server does not yet
      // count it offline), and its creation then waits out its whole time for an answer that never comes.
      inactive_threshold: nanos(60_000),
    }));
    try {
      for (let held = info.num_pending; held > 0; ) {
        const batch = Math.min(held, PULL_BATCH);
        const { got, drained } = await new Promise<{ got: number; drained: boolean }>((resolve) => {
          let got = 0;
          // The pull ends by itself (its bound, or its time up); this is for a server that never says so.
          const timer = setTimeout(() => resolve({ got, drained: false }), timeoutMs + 5_000);
          const end = (drained: boolean) => {
            clearTimeout(timer);
            resolve({ got, drained });
          };
          deliver = (m) => {
            // A status (408 time up, 409 byte bound or consumer gone) ends the pull with what came.
            if (m.headers?.code) return end(false);
            const { pending, ...message } = latestOf(m);
            latest.set(message.subject, message);
            options.onMessage?.(message);
            if (++got === batch || pending === 0) end(pending === 0);
          };
          nc.publish(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${name}`, JSON.stringify({ batch, max_bytes: PULL_MAX_BYTES, expires: timeoutMs * 1_000_000 }), { reply: inbox });
        });
        if (got === 0) throw new Error(`${stream}: no message came within ${timeoutMs} ms while ${held} were held`);
        if (drained) break;
        held -= got;
      }
    } finally {
      nc.publish(`$JS.API.CONSUMER.DELETE.${stream}.${name}`);
    }
  } finally {
    sub.unsubscribe();
  }
  return latest;
}

/**
 * The consumer's creation, made once more when it times out: the cluster may have been electing its
 * meta leader again (a server just lost), and answers the next time. The first, if it was made after
 * all, goes by itself once idle.
 */
async function addConsumer<T>(add: () => Promise<T>): Promise<T> {
  const { errors } = await lazy(import('@nats-io/transport-node'));
  try {
    return await add();
  } catch (err) {
    if (!(err instanceof errors.TimeoutError)) throw err;
    return add();
  }
}

/**
 * A delivered message as the stream holds it, and how many the consumer had left after it. The reply
 * subject carries them: `$JS.ACK.<stream>.<consumer>.<delivered>.<sequence>.<n>.<nanos>.<pending>`, or
 * with a domain and an account hash after `ACK` (and a token at the end).
 */
function latestOf(m: Msg): LatestMessage & { pending: number } {
  const tokens = (m.reply ?? '').split('.');
  const at = tokens.length === 9 ? 5 : 7;
  const storedNanos = tokens[at + 2] ?? '0';
  return {
    subject: m.subject,
    streamSequence: Number(tokens[at]),
    storedAt: new Date(Number(storedNanos.slice(0, -6))).toISOString(),
    bytes: m.data,
    ...(m.headers ? { headers: m.headers } : {}),
    pending: Number(tokens[at + 3]),
  };
}
