import type { NatsConnection } from '@nats-io/transport-node';
import { latestPerSubject, type LatestMessage } from '../../link/latest.js';
import { DECLARATION_SUBJECTS, DECLARATIONS_STREAM, HEARTBEAT_SUBJECTS, HEARTBEATS_STREAM, REPORTS_STREAM, REPORTS_SUBJECTS } from '../../link/wire.js';
import { digestOf, isEnvelope } from '../../core/declaration/envelope.js';
import { markOf, orderIn } from '../../core/declaration/order.js';
import { lazy } from '../../core/system/interop.js';
import type { HeartbeatSeen, KeySeen, ReportSeen, SignatureVerdict } from './fleet.js';

/**
 * Checks the signature of a node's report. The fleet view calls it on each node's newest report when
 * one is given, and flags a report whose signature fails.
 */
export type ReportVerifier = (node: string, message: LatestMessage) => Promise<SignatureVerdict>;

export interface FleetRead {
  reports: ReportSeen[];
  heartbeats: HeartbeatSeen[];
  keys: KeySeen[];
}

/** The last token of a subject: the node (`mesh.report.<node>`, `$KV.mesh_declarations.<node>`). */
export const nodeOf = (subject: string) => subject.slice(subject.lastIndexOf('.') + 1);

/** The bytes as JSON, or undefined when they are not. */
export function parse(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(data));
  } catch {
    return undefined;
  }
}

/** The newest message of every subject of a stream; a stream not created yet (10059) holds nothing. */
async function latest(nc: NatsConnection, stream: string, filter: string, onMessage?: (message: LatestMessage) => void): Promise<LatestMessage[]> {
  const { JetStreamApiError } = await lazy(import('@nats-io/jetstream'));
  try {
    return [...(await latestPerSubject(nc, stream, filter, onMessage ? { onMessage } : {})).values()];
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === 10059) return [];
    throw err;
  }
}

/**
 * The newest report, heartbeat and key value of every node, read together: three streams, one pass each.
 * Each report's check begins as it comes, so the checks run while the streams are still read; a report
 * superseded during the read (a newer one of its node came) was checked for nothing, and only the
 * newest's verdict is shown.
 */
export async function readFleet(nc: NatsConnection, options: { verifyReport?: ReportVerifier } = {}): Promise<FleetRead> {
  const verify = options.verifyReport;
  const begun = new Map<LatestMessage, Promise<SignatureVerdict>>();
  const begin = verify && ((m: LatestMessage) => {
    const verdict = verify(nodeOf(m.subject), m);
    // Awaited below unless superseded; a superseded check's failure is nobody's.
    verdict.catch(() => {});
    begun.set(m, verdict);
  });
  const [reports, beats, keys] = await Promise.all([
    latest(nc, REPORTS_STREAM, REPORTS_SUBJECTS, begin),
    latest(nc, HEARTBEATS_STREAM, HEARTBEAT_SUBJECTS),
    latest(nc, DECLARATIONS_STREAM, DECLARATION_SUBJECTS),
  ]);
  const checked: ReportVerifier | undefined = verify && ((node, m) => begun.get(m) ?? verify(node, m));
  return {
    reports: await Promise.all(reports.map((m) => reportSeen(m, checked))),
    heartbeats: beats.map(heartbeatSeen),
    // A deleted or purged key leaves a marker without data: the mesh says nothing to that node now.
    keys: keys.filter((m) => m.bytes.length > 0).map((m) => keySeen(m)),
  };
}

/** A heartbeat as the view reads it (stored, or heard as it is published). */
export function heartbeatSeen(m: Pick<LatestMessage, 'subject' | 'storedAt' | 'bytes'>): HeartbeatSeen {
  const beat = parse(m.bytes);
  return { node: nodeOf(m.subject), storedAtMs: Date.parse(m.storedAt), ...(typeof beat === 'object' && beat !== null ? { beat: beat as HeartbeatSeen['beat'] } : {}) };
}

/** A node's report as the view reads it, its signature checked when a verifier is given. */
export async function reportSeen(message: LatestMessage, verify: ReportVerifier | undefined): Promise<ReportSeen> {
  const node = nodeOf(message.subject);
  const value = parse(message.bytes) as ReportSeen['report'] | undefined;
  const readable = typeof value === 'object' && value !== null && typeof value.outcome === 'string' && typeof value.finishedAt === 'string';
  return {
    node,
    storedAtMs: Date.parse(message.storedAt),
    ...(readable ? { report: value } : {}),
    ...(verify ? { signature: await verify(node, message) } : {}),
  };
}

/** A node's key as the view reads it: the mark of the declaration it holds. */
export function keySeen(message: Pick<LatestMessage, 'subject' | 'bytes'>): KeySeen {
  const node = nodeOf(message.subject);
  const envelope = parse(message.bytes);
  if (!isEnvelope(envelope)) return { node };
  const payload = Buffer.from(envelope.payload, 'base64');
  const order = orderIn(parse(payload));
  return order ? { node, newest: markOf(order, digestOf(payload)) } : { node };
}
