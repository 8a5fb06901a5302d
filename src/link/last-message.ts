import type { NatsConnection } from '@nats-io/transport-node';
import { lazy } from '../core/system/interop.js';
import type { LatestMessage } from './latest.js';

/** JetStream's answer for a stream that does not exist (a subject with no message is the client's null). */
const STREAM_NOT_FOUND = 10059;

/**
 * One subject's messages read by the stream itself (a get of the last message, or of the next one from a
 * sequence), never through a consumer. A consumer of one replica is placed on one of the stream's servers
 * at random, a server killed a moment ago included (the cluster does not count it offline yet), and its
 * creation then waits out its whole time: a command that reads one node's records on a cluster with a
 * server down would fail one time in three. A get is answered by the stream's leader, which the cluster
 * elects again on the servers still up.
 */
export class SubjectReader {
  private constructor(private readonly get: (stream: string, query: { last_by_subj: string } | { seq: number; next_by_subj: string }) => Promise<LatestMessage | undefined>) {}

  static async open(nc: NatsConnection): Promise<SubjectReader> {
    const { jetstreamManager } = await lazy(import('@nats-io/jetstream'));
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    return new SubjectReader(async (stream, query) => {
      try {
        const m = await jsm.streams.getMessage(stream, query as never);
        return m ? { subject: m.subject, streamSequence: m.seq, storedAt: m.time.toISOString(), bytes: m.data, headers: m.header } : undefined;
      } catch (err) {
        if ((err as { code?: unknown }).code === STREAM_NOT_FOUND) return undefined;
        throw err;
      }
    });
  }

  /** The newest message of the subject; none when the stream or the subject holds none. */
  last(stream: string, subject: string): Promise<LatestMessage | undefined> {
    return this.get(stream, { last_by_subj: subject });
  }

  /** Every message of the subject the stream still holds, oldest first: a get each (a bucket's key keeps a few). */
  async all(stream: string, subject: string): Promise<LatestMessage[]> {
    const found: LatestMessage[] = [];
    for (let seq = 1; ; ) {
      const next = await this.get(stream, { seq, next_by_subj: subject });
      if (!next) return found;
      found.push(next);
      seq = next.streamSequence + 1;
    }
  }
}
