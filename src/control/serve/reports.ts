import type { NatsConnection } from '@nats-io/transport-node';
import type { SignatureVerdict } from '../fleet/fleet.js';
import { fleetReportVerifier } from '../fleet/trust.js';
import type { Enrolments } from '../../link/enrolment.js';
import { REPORTS_STREAM, reportSubject } from '../../link/wire.js';
import { lazy } from '../../core/system/interop.js';
import type { PageReport } from '../page/page-wire.js';

/** How many of a node's reports its page shows: the newest. */
export const REPORTS_SHOWN = 50;

/**
 * A report's bytes as the page shows them: the host's report (steps with their typed changes and the
 * words the host made of them; a sensitive content is only said to be sensitive, never carried), with
 * its facts left out. Undefined when the bytes are not a report.
 */
export function pageReportOf(bytes: Uint8Array, signature: SignatureVerdict | undefined): PageReport | undefined {
  let value: Partial<PageReport> & { facts?: unknown };
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8')) as typeof value;
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || typeof value.sequence !== 'number' || typeof value.outcome !== 'string') return undefined;
  const { sequence, trigger, mode, outcome, error, declaration, steps, said, startedAt, finishedAt } = value as PageReport;
  return {
    sequence, trigger, mode: mode ?? null, outcome, declaration: declaration ?? null, steps: Array.isArray(steps) ? steps : [], said: Array.isArray(said) ? said : [], startedAt, finishedAt,
    ...(error ? { error } : {}),
    ...(signature ? { signature } : {}),
  };
}

/**
 * A node's newest reports, newest first, each with its signature's verdict, and how many the stream
 * holds. One ordered read of the node's subject; only the newest REPORTS_SHOWN are kept while it goes.
 */
export async function nodeReports(nc: NatsConnection, node: string, enrolments: Promise<Enrolments>): Promise<{ reports: PageReport[]; held: number }> {
  const { jetstream, DeliverPolicy, JetStreamApiError } = await lazy(import('@nats-io/jetstream'));
  let consumer;
  try {
    consumer = await jetstream(nc).consumers.get(REPORTS_STREAM, { filter_subjects: reportSubject(node), deliver_policy: DeliverPolicy.All });
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === 10059) return { reports: [], held: 0 };
    throw err;
  }
  const held = (await consumer.info()).num_pending;
  const kept: Array<{ bytes: Uint8Array; headers: import('@nats-io/transport-node').MsgHdrs | undefined; subject: string; seq: number; at: string }> = [];
  if (held > 0) {
    const messages = await consumer.consume({ max_messages: 500 });
    let read = 0;
    for await (const m of messages) {
      kept.push({ bytes: m.data, headers: m.headers, subject: m.subject, seq: m.seq, at: new Date(m.info.timestampNanos / 1e6).toISOString() });
      if (kept.length > REPORTS_SHOWN) kept.shift();
      if (++read >= held || m.info.pending === 0) break;
    }
    void messages.close();
  }
  const verify = fleetReportVerifier(enrolments);
  const reports = await Promise.all(
    kept.reverse().map(async (m) => pageReportOf(m.bytes, await verify(node, { subject: m.subject, streamSequence: m.seq, storedAt: m.at, bytes: m.bytes, ...(m.headers ? { headers: m.headers } : {}) }))),
  );
  return { reports: reports.filter((r): r is PageReport => r !== undefined), held };
}
