import type { NatsConnection } from '@nats-io/transport-node';
import type { KV } from '@nats-io/kv';
import { latestPerSubject } from '../../link/latest.js';
import { SubjectReader } from '../../link/last-message.js';
import { DECLARATION_SUBJECTS, DECLARATIONS_BUCKET, DECLARATIONS_STREAM, declarationSubject, HEARTBEAT_SUBJECTS, heartbeatSubject, HEARTBEATS_STREAM, nodeOfReportSubject, REPORTS_STREAM, REPORTS_SUBJECTS, reportSubject } from '../../link/wire.js';
import { refused } from '../../core/system/errors.js';
import { sign } from '../../core/declaration/envelope.js';
import { receiveDeclaration } from '../../core/declaration/load.js';
import { compareOrder, orderOf, describeOrder, orderIn, epochIn, type Order } from '../../core/declaration/order.js';
import { lazy } from '../../core/system/interop.js';
import { isRevisionConflict } from '../../link/revision.js';
import { sealingClaimOf, type SealingClaim } from '../../link/sealing-trust.js';
import { canonicalDeclaration } from '../fleet/history.js';
import { storeFullRefusal } from './store-full.js';

/** What the mesh holds for a node: its key's value (with the revision a put must name) and its latest report. */
export interface NodeRecord {
  /** The key's value: the revision a put must name, and the declaration it holds when it is a readable envelope. */
  key?: { revision: number; mark?: Order; declaration?: Record<string, unknown> };
  /** The declaration the node's latest report was about, when it named one. */
  reported?: Order;
  /**
   * What the node's last heartbeat says it applied and holds (a declaration kept, waiting for a pause
   * to end, say): the host's own word, which outlives a purged key or a lost reports stream.
   */
  held?: Order[];
  /** The curve key the node's last heartbeat (or latest report) claims: its signature is checked against the enrolment when it is used. */
  sealing?: SealingClaim;
  /**
   * The newest of what the key held before its value (the bucket keeps a few values a key): an old
   * value put back into the key (a replay, a restore) does not make the next number stale.
   */
  history?: Order;
}

/** Two operators sending at once rarely collide more than once; a bound keeps a storm from looping for ever. */
export const PUT_ATTEMPTS = 8;
/** What a put adds to the value: its subject and the compare-and-set header. */
const PUT_HEADROOM = 256;

/** Whether a comes after b as the host orders them (the epoch decides when both carry one, else the sequence alone). */
const isNewer = (a: Order, b: Order): boolean => compareOrder(a, b) > 0;

/**
 * The number a declaration that names none gets: after the newest of the key, the latest report and what
 * the last heartbeat says the host holds, in the epoch asked or the one in force.
 */
export function nextMark(record: NodeRecord, epoch: number | undefined): Order {
  const known = [record.key?.mark, record.reported, record.history, ...(record.held ?? [])].filter((m): m is Order => m !== undefined);
  const sequence = Math.max(0, ...known.map((m) => m.sequence)) + 1;
  const inForce = epoch ?? known.map((m) => m.epoch).filter((e): e is number => e !== undefined).reduce<number | undefined>((a, e) => (a === undefined || e > a ? e : a), undefined);
  return orderOf({ epoch: inForce, sequence });
}

/** What a key's value says: the declaration its envelope carries and where it stands, when it is readable. */
function keyOf(revision: number, bytes: Uint8Array | undefined): NonNullable<NodeRecord['key']> {
  try {
    const envelope = JSON.parse(new TextDecoder().decode(bytes)) as { payload: string };
    const d = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as Record<string, unknown>;
    const mark = orderIn(d);
    return mark ? { revision, mark, declaration: d } : { revision };
  } catch {
    return { revision };
  }
}

/** The message as JSON, or undefined: a message the control side cannot read numbers nothing. */
function parsed(bytes: Uint8Array): Record<string, unknown> | undefined {
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** The declaration a report names, when it is readable. */
const reportedOf = (bytes: Uint8Array): Order | undefined => orderIn(parsed(bytes)?.declaration);

/** What a heartbeat says the host applied and keeps, when it is readable. */
function heldOf(bytes: Uint8Array): Order[] | undefined {
  const beat = parsed(bytes);
  const held = [orderIn(beat?.lastApplied), orderIn(beat?.kept)].filter((m): m is Order => m !== undefined);
  return held.length > 0 ? held : undefined;
}

/** The curve key claim a heartbeat carries (newer than the latest report's: it wins), when it carries one. */
function sealingOfBeat(bytes: Uint8Array): SealingClaim | undefined {
  const claim = parsed(bytes)?.sealing as Partial<SealingClaim> | undefined;
  return typeof claim?.key === 'string' && typeof claim.signature === 'string' ? { key: claim.key, signature: claim.signature } : undefined;
}

export async function openDeclarations(nc: NatsConnection): Promise<KV> {
  const { Kvm } = await lazy(import('@nats-io/kv'));
  return new Kvm(nc).open(DECLARATIONS_BUCKET);
}

/** The node's key (any operation: a deleted key still has the revision a put must name), its latest report and its last heartbeat. */
export async function readNodeRecord(nc: NatsConnection, kv: KV, node: string): Promise<NodeRecord> {
  // Each read a get of the stream's own, never a consumer: a send to one node works on a cluster with a server down.
  const reader = await SubjectReader.open(nc);
  const [entry, report, beat, history] = await Promise.all([kv.get(node), reader.last(REPORTS_STREAM, reportSubject(node)), reader.last(HEARTBEATS_STREAM, heartbeatSubject(node)), newestInHistory(reader, node)]);
  const record: NodeRecord = {};
  if (history) record.history = history;
  if (entry) record.key = keyOf(entry.revision, entry.operation === 'PUT' ? entry.value : undefined);
  const reported = report && reportedOf(report.bytes);
  if (reported) record.reported = reported;
  const sealing = report && sealingClaimOf(report.headers);
  if (sealing) record.sealing = sealing;
  const held = beat && heldOf(beat.bytes);
  if (held) record.held = held;
  const beatSealing = beat && sealingOfBeat(beat.bytes);
  if (beatSealing) record.sealing = beatSealing;
  return record;
}

/**
 * What the mesh holds for every node at once: the newest value of each key, each node's latest report
 * and last heartbeat, one read of each stream (a thousand nodes cost three consumers, not three thousand reads).
 */
export async function readNodeRecords(nc: NatsConnection): Promise<Map<string, NodeRecord>> {
  const [keys, reports, beats] = await Promise.all([latestOrNone(nc, DECLARATIONS_STREAM, DECLARATION_SUBJECTS), latestOrNone(nc, REPORTS_STREAM, REPORTS_SUBJECTS), latestOrNone(nc, HEARTBEATS_STREAM, HEARTBEAT_SUBJECTS)]);
  const records = new Map<string, NodeRecord>();
  const recordOf = (node: string) => records.get(node) ?? records.set(node, {}).get(node)!;
  for (const m of keys.values()) {
    const operation = m.headers?.get('KV-Operation');
    recordOf(m.subject.slice(declarationSubject('').length)).key = keyOf(m.streamSequence, operation === 'DEL' || operation === 'PURGE' ? undefined : m.bytes);
  }
  for (const m of reports.values()) {
    const reported = reportedOf(m.bytes);
    if (reported) recordOf(nodeOfReportSubject(m.subject)).reported = reported;
    const sealing = sealingClaimOf(m.headers);
    if (sealing) recordOf(nodeOfReportSubject(m.subject)).sealing = sealing;
  }
  for (const m of beats.values()) {
    const held = heldOf(m.bytes);
    if (held) recordOf(m.subject.slice(heartbeatSubject('').length)).held = held;
    const sealing = sealingOfBeat(m.bytes);
    if (sealing) recordOf(m.subject.slice(heartbeatSubject('').length)).sealing = sealing;
  }
  return records;
}

/** The newest (epoch, sequence) among every value the bucket still keeps for the key. */
async function newestInHistory(reader: SubjectReader, node: string): Promise<Order | undefined> {
  let newest: Order | undefined;
  for (const m of await reader.all(DECLARATIONS_STREAM, declarationSubject(node))) {
    const operation = m.headers?.get('KV-Operation');
    const mark = operation === 'DEL' || operation === 'PURGE' ? undefined : keyOf(m.streamSequence, m.bytes).mark;
    if (mark && (!newest || isNewer(mark, newest))) newest = mark;
  }
  return newest;
}

/** The newest message of every subject of a stream; a stream not made yet holds none. */
async function latestOrNone(nc: NatsConnection, stream: string, filter: string) {
  try {
    return await latestPerSubject(nc, stream, filter);
  } catch (err) {
    if ((err as { code?: unknown }).code === 10059) return new Map<string, never>();
    throw err;
  }
}

/** The bytes of the signed envelope of a payload of `length` bytes: the payload in base64, the key, the signature. */
export function envelopeBytes(length: number): number {
  return JSON.stringify({ payload: 'A'.repeat(Math.ceil(length / 3) * 4), key: 'O'.repeat(56), signature: 'A'.repeat(88) }).length;
}

/** The value a put would carry, over the server's payload limit: refused with both sizes and what to do. */
export function checkPayloadSize(nc: NatsConnection, bytes: number, what: string, nothing = 'nothing was sent'): void {
  const limit = nc.info?.max_payload;
  if (limit === undefined || bytes + PUT_HEADROOM <= limit) return;
  throw refused(
    `${what} is ${bytes} bytes signed and encoded; the server takes at most ${limit} bytes a message (its max_payload, less ${PUT_HEADROOM} for the put's headers): ${nothing}`,
    ['large content belongs in archives: put it in the object store (an archive resource names it by digest) and keep the declaration to what the host must converge', 'or raise max_payload on every server of the mesh (the hosts\' reports are bounded by it too)'],
  );
}

/**
 * Puts a declaration into the node's key with compare-and-set on the revision read: `make` is given
 * what the mesh holds (`first`, if given, on the first try) and returns the bytes (numbered, signed) or refuses; a put that lost a race to
 * another operator reads again and asks `make` again, a bounded number of times.
 */
export async function putNumbered(nc: NatsConnection, kv: KV, node: string, make: (record: NodeRecord) => Promise<{ bytes: Uint8Array; mark: Order }>, first?: NodeRecord): Promise<{ revision: number; mark: Order; attempts: number }> {
  for (let attempt = 1; attempt <= PUT_ATTEMPTS; attempt++) {
    // A record read already (every node's at once, for a fleet) is used for the first try.
    const record = attempt === 1 && first ? first : await readNodeRecord(nc, kv, node);
    const { bytes, mark } = await make(record);
    try {
      const revision = record.key ? await kv.update(node, bytes, record.key.revision) : await kv.create(node, bytes);
      return { revision, mark, attempts: attempt };
    } catch (err) {
      // The key moved since it was read: read again and number again.
      if (isRevisionConflict(err)) continue;
      // No room in the mesh's store: said, naming which limit, as data.
      throw (await storeFullRefusal(nc, DECLARATIONS_STREAM, bytes.length, err)) ?? err;
    }
  }
  throw refused(`the key of ${node} changed between every read and put (${PUT_ATTEMPTS} attempts): other senders are busy on it; nothing was sent, try again`);
}

/** An envelope keeps its numbers: checked as the host will check it, put as it is. */
export async function asSigned(bytes: Buffer, file: string, node: string): Promise<{ bytes: Uint8Array; mark: Order }> {
  const { declaration } = await receiveDeclaration(bytes, { source: file, node });
  return { bytes, mark: orderOf(declaration) };
}

/**
 * A plain declaration numbered and signed. What the file declares is kept, and its bytes signed as
 * they are when nothing changes (the digest an operator computed stays true); what it leaves out is
 * numbered after what the mesh holds.
 */
export async function numberAndSign(parsed: unknown, bytes: Buffer, file: string, node: string, record: NodeRecord, epochFlag: number | undefined, seed: string): Promise<{ bytes: Uint8Array; mark: Order }> {
  const fields = parsed as Record<string, unknown>;
  const declared = typeof fields.sequence === 'number' ? fields.sequence : undefined;
  const next = nextMark(record, epochFlag ?? epochIn(fields));
  const sequence = declared ?? next.sequence;
  const epoch = epochFlag ?? epochIn(fields) ?? next.epoch;
  const unchanged = declared !== undefined && epoch === fields.epoch;
  const payload = unchanged ? bytes : Buffer.from(JSON.stringify({ ...fields, ...(epoch === undefined ? {} : { epoch }), sequence }));
  const { declaration } = await receiveDeclaration(payload, { source: file, node });
  return { bytes: Buffer.from(JSON.stringify(await sign(payload, seed))), mark: orderOf(declaration) };
}

/** A declared number the host would refuse as stale: not newer than the node's key, or than what its last heartbeat says it holds. */
export function refuseUnlessNewer(mark: Order, record: NodeRecord, file: string, node: string): void {
  const hint = ['leave the sequence out of the file to have the next one given, or declare a newer one (or a newer epoch with --epoch N)'];
  const current = record.key?.mark;
  if (current && !isNewer(mark, current)) {
    throw refused(`${file} declares ${describeOrder(mark)}, which is not newer than the key of ${node} (${describeOrder(current)}, revision ${record.key!.revision}): the host would refuse it as stale; nothing was sent`, hint);
  }
  const held = record.held?.find((h) => !isNewer(mark, h));
  if (held) throw refused(`${file} declares ${describeOrder(mark)}, which is not newer than what ${node} holds by its last heartbeat (${describeOrder(held)}): the host would refuse it as stale; nothing was sent`, hint);
}

/**
 * A copy signed already (approved by as many keys as the trust root needs) put as it is: only while it
 * is still newer than what the mesh holds for the node, which it was when it was signed unless another
 * send came first; then it is refused (propose it again), never renumbered.
 */
export async function putSigned(nc: NatsConnection, kv: KV, node: string, copy: { envelope: unknown; mark: Order }, file: string, first?: NodeRecord): Promise<{ revision: number; mark: Order; attempts: number }> {
  const bytes = Buffer.from(JSON.stringify(copy.envelope));
  return putNumbered(nc, kv, node, async (record) => {
    refuseUnlessNewer(copy.mark, record, file, node);
    checkPayloadSize(nc, bytes.length, `the approved declaration for ${node}`);
    return { bytes, mark: copy.mark };
  }, first);
}

/** Two copies that say the same thing, bar their sequence. */
export const sameDeclaration = (a: Record<string, unknown>, b: Record<string, unknown>) => canonicalDeclaration(a, ['sequence']) === canonicalDeclaration(b, ['sequence']);
