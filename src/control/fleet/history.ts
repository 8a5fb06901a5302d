import type { NatsConnection } from '@nats-io/transport-node';
import { digestOf, isEnvelope, signaturesOf } from '../../core/declaration/envelope.js';
import { orderIn, sameOrder, type Order } from '../../core/declaration/order.js';
import type { Enrolments } from '../../link/enrolment.js';
import { readSubject, type StoredMessage } from '../../link/subject-read.js';
import { declarationSubject, HISTORY_STREAM, REPORTS_STREAM, reportSubject } from '../../link/wire.js';
import { fleetReportVerifier } from './trust.js';
import { declarationChanges } from './declaration-diff.js';

/** What became of a declaration, by the node's own reports. */
export type HistoryOutcome =
  /** The first report about it: what the delivery did. `reports` counts every report about it (reconciles too). */
  | { kind: 'reported'; outcome: string; at: string; report: number; reports: number; error?: string }
  /** The newest the node was given, and no report about it yet. */
  | { kind: 'pending' }
  /** A newer one came before the node reported on it (a node paused or away takes only the newest). */
  | { kind: 'superseded' };

/** One put to the node's key, or its removal, as the history keeps it. */
export interface HistoryEntry {
  node: string;
  /** Where the history stream holds it: the order of the puts. */
  position: number;
  /** When the mesh stored it (ISO). */
  at: string;
  operation: 'put' | 'delete';
  mark?: Order;
  digest?: string;
  /** The public key that signed it (the first, when several control keys did). */
  signedBy?: string;
  declaration?: Record<string, unknown>;
  outcome?: HistoryOutcome;
}

/** The messages as entries: an envelope's declaration and signer, a deletion as such, unreadable bytes with neither. */
export function entriesOf(node: string, messages: StoredMessage[]): HistoryEntry[] {
  return messages.map((m) => {
    const operation = m.headers?.get('KV-Operation');
    const entry: HistoryEntry = { node, position: m.streamSequence, at: m.storedAt, operation: operation === 'DEL' || operation === 'PURGE' ? 'delete' : 'put' };
    if (entry.operation === 'delete') return entry;
    try {
      const envelope: unknown = JSON.parse(Buffer.from(m.bytes).toString('utf8'));
      if (!isEnvelope(envelope)) return entry;
      const payload = Buffer.from(envelope.payload, 'base64');
      const declaration = JSON.parse(payload.toString('utf8')) as Record<string, unknown>;
      const mark = orderIn(declaration);
      if (!mark) return entry;
      return { ...entry, mark, digest: digestOf(payload), signedBy: signaturesOf(envelope)[0]?.key, declaration };
    } catch {
      return entry;
    }
  });
}

/** A report as history reads it: the declaration it was about and what became of it. */
interface ReportAbout {
  about: Order & { digest?: string };
  outcome: string;
  at: string;
  report: number;
  error?: string;
}

function reportAbout(m: StoredMessage): ReportAbout | undefined {
  try {
    const r = JSON.parse(Buffer.from(m.bytes).toString('utf8')) as { sequence?: unknown; outcome?: unknown; declaration?: { epoch?: unknown; sequence?: unknown; digest?: unknown } | null; finishedAt?: unknown; error?: { message?: unknown; resource?: unknown } };
    const d = r.declaration;
    const order = orderIn(d);
    if (!d || !order || typeof r.outcome !== 'string' || typeof r.sequence !== 'number') return undefined;
    const error = r.error && typeof r.error.message === 'string' ? `${typeof r.error.resource === 'string' ? `${r.error.resource}: ` : ''}${r.error.message}` : undefined;
    return {
      about: { ...order, ...(typeof d.digest === 'string' ? { digest: d.digest } : {}) },
      outcome: r.outcome,
      at: typeof r.finishedAt === 'string' ? r.finishedAt : m.storedAt,
      report: r.sequence,
      ...(error ? { error } : {}),
    };
  } catch {
    return undefined;
  }
}

/**
 * Each put's outcome from the reports about it (matched by its number and digest): the first report
 * says what the delivery did. A put never reported on is pending when it is the newest, superseded when
 * a newer one followed.
 */
export function withOutcomes(entries: HistoryEntry[], reports: ReportAbout[]): HistoryEntry[] {
  const newestPut = [...entries].reverse().find((e) => e.operation === 'put');
  // By sequence first: a node with years of hourly reports is not compared report by report with every put.
  const bySequence = new Map<number, ReportAbout[]>();
  for (const r of reports) (bySequence.get(r.about.sequence) ?? bySequence.set(r.about.sequence, []).get(r.about.sequence)!).push(r);
  return entries.map((e) => {
    if (e.operation !== 'put' || !e.mark) return e;
    const about = (bySequence.get(e.mark.sequence) ?? []).filter((r) => sameOrder(r.about, e.mark!) && (r.about.digest === undefined || r.about.digest === e.digest));
    const first = about[0];
    if (first) return { ...e, outcome: { kind: 'reported', outcome: first.outcome, at: first.at, report: first.report, reports: about.length, ...(first.error ? { error: first.error } : {}) } };
    return { ...e, outcome: e === newestPut ? { kind: 'pending' } : { kind: 'superseded' } };
  });
}

/**
 * Every declaration the mesh kept for the node, oldest first, each with its outcome from the node's
 * reports. A report whose signature fails against the node's key says nothing here: a forged report
 * never makes a declaration look applied.
 */
export async function readHistory(nc: NatsConnection, node: string, enrolments: Promise<Enrolments>): Promise<HistoryEntry[]> {
  const [kept, reported] = await Promise.all([readSubject(nc, HISTORY_STREAM, declarationSubject(node)), readSubject(nc, REPORTS_STREAM, reportSubject(node))]);
  const verify = fleetReportVerifier(enrolments);
  const trusted = await Promise.all(
    reported.map(async (m) => ((await verify(node, { subject: m.subject, streamSequence: m.streamSequence, storedAt: m.storedAt, bytes: m.bytes, ...(m.headers ? { headers: m.headers } : {}) })).verdict === 'failed' ? undefined : reportAbout(m))),
  );
  return withOutcomes(entriesOf(node, kept), trusted.filter((r): r is ReportAbout => r !== undefined));
}

/** The entry a `--sequence N` (and `--epoch E`) names: the newest put with that number (in any epoch, without `--epoch`). */
export function entryNumbered(entries: HistoryEntry[], sequence: number, epoch?: number): HistoryEntry | undefined {
  const named = (mark: Order) => (epoch === undefined ? mark.sequence === sequence : sameOrder(mark, { epoch, sequence }));
  return [...entries].reverse().find((e) => e.mark !== undefined && named(e.mark));
}

/** The newest put: what the node's key holds (unless removed since). */
export function currentEntry(entries: HistoryEntry[]): HistoryEntry | undefined {
  const last = entries.at(-1);
  return last?.operation === 'put' ? last : undefined;
}

/** The declaration with `leaveOut` (its number and node) left out and its keys in one order: two that say the same thing compare equal. */
export function canonicalDeclaration(d: Record<string, unknown>, leaveOut: string[] = ['sequence', 'epoch', 'node']): string {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value) ? value.map(canonical) : value && typeof value === 'object' ? Object.fromEntries(Object.entries(value).sort(([x], [y]) => (x < y ? -1 : 1)).map(([k, v]) => [k, canonical(v)])) : value;
  return JSON.stringify(canonical(Object.fromEntries(Object.entries(d).filter(([k]) => !leaveOut.includes(k)))));
}

/**
 * What a rollback puts back when not told which: the newest earlier declaration the node converged to
 * that differs from the one it holds now.
 */
export function lastGood(entries: HistoryEntry[]): HistoryEntry | undefined {
  const current = currentEntry(entries);
  const now = current?.declaration ? canonicalDeclaration(current.declaration) : undefined;
  return [...entries].reverse().find((e) => e !== current && e.declaration && e.outcome?.kind === 'reported' && e.outcome.outcome === 'converged' && canonicalDeclaration(e.declaration) !== now);
}

/** What the node held when a moment came: the newest put stored before it. */
export function heldAt(entries: HistoryEntry[], atIso: string): HistoryEntry | undefined {
  const before = entries.filter((e) => e.at < atIso);
  const last = before.at(-1);
  return last?.operation === 'put' ? last : undefined;
}

/** What became of a declaration, in words. */
export function describeOutcome(o: HistoryOutcome | undefined): string {
  if (!o) return 'unreadable';
  if (o.kind === 'pending') return 'not reported yet';
  if (o.kind === 'superseded') return 'superseded before it was reported';
  return `${o.outcome} (report ${o.report}${o.reports > 1 ? `, ${o.reports} reports about it` : ''})${o.error ? `: ${o.error}` : ''}`;
}

export const shortKey = (key: string | undefined) => (key ? `${key.slice(0, 8)}…${key.slice(-4)}` : '?');

/** `+motd ~conf -old`: what a put changed from the one before it, by resource id. */
export function changedSince(before: HistoryEntry | undefined, entry: HistoryEntry): string {
  if (!entry.declaration) return '';
  if (!before?.declaration) return 'first kept';
  const changes = declarationChanges(before.declaration, entry.declaration);
  if (changes.length === 0) return 'the same as before';
  const sign = { added: '+', removed: '-', changed: '~' } as const;
  return changes.map((c) => `${sign[c.change]}${c.resource === 'declaration' ? 'declaration' : c.resource.split(' ')[1]}`).join(' ');
}


/** The put before this one: what it changed from. */
export const previousPut = (entries: HistoryEntry[], e: HistoryEntry) => entries.slice(0, entries.indexOf(e)).reverse().find((p) => p.declaration);

/** One entry as the page shows it: words only, never the declaration's content. */
export interface HistoryLine {
  mark: Order | null;
  at: string;
  outcome: string;
  /** converged, failed, refused, pending, superseded, removed or unreadable: what the page colours it by. */
  state: string;
  signedBy: string;
  changes: string;
  current: boolean;
}

/** The history as the page shows it, newest first, at most `limit` entries. */
export function historyLines(entries: HistoryEntry[], limit: number): HistoryLine[] {
  const current = currentEntry(entries);
  return entries
    .slice(-limit)
    .reverse()
    .map((e) => ({
      mark: e.mark ?? null,
      at: e.at,
      outcome: e.operation === 'delete' ? 'the key was removed' : describeOutcome(e.outcome),
      state: e.operation === 'delete' ? 'removed' : !e.outcome ? 'unreadable' : e.outcome.kind === 'reported' ? e.outcome.outcome : e.outcome.kind,
      signedBy: e.signedBy ? shortKey(e.signedBy) : '',
      changes: changedSince(previousPut(entries, e), e),
      current: e === current,
    }));
}
