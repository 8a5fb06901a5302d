import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { fleetOrder, fleetRows, type HeartbeatSeen, type KeySeen, type RemovalSeen, type ReportSeen } from '../fleet/fleet.js';
import { heartbeatSeen, keySeen, readFleet, reportSeen } from '../fleet/fleet-read.js';
import { fleetReportVerifier, readEnrolments } from '../fleet/trust.js';
import type { Labels } from '../fleet/labels.js';
import type { Enrolments } from '../../link/enrolment.js';
import { DECLARATION_SUBJECTS, ENROLMENTS_BUCKET, HEARTBEAT_SUBJECTS, REPORTS_SUBJECTS } from '../../link/wire.js';
import type { Logger } from '../../core/system/log.js';
import type { PageReport, PageRow, RowsMessage } from '../page/page-wire.js';
import { pageReportOf } from './reports.js';
import { pageRow, rowKey } from './rows.js';

export interface FeedOptions {
  nc: NatsConnection;
  now: () => number;
  /** A monotonic clock (ms) for the beats' ages: silence is a duration, which no step of the wall clock may move. */
  monotonic?: () => number;
  log: Logger;
  /** How often changed rows go out together (a burst of reports is one message a client). */
  flushMs?: number;
  /** How often every row is looked at again: a node turns silent with no message at all. */
  tickMs?: number;
}

type Heard = { kind: 'report' | 'heartbeat' | 'key' | 'enrolment'; msg: Msg; atMs: number; monoMs: number };

/**
 * The fleet as the page shows it, kept current: the newest report, heartbeat and key of every node,
 * read once, then followed by listening to reports, heartbeats and declaration puts as they are
 * published. Rows that changed go to the listeners every `flushMs`; every row is looked at again every
 * `tickMs`, so a node that stops beating is shown silent once its three intervals pass.
 */
export class FleetFeed {
  private readonly reports = new Map<string, ReportSeen>();
  private readonly beats = new Map<string, HeartbeatSeen>();
  /** When each node's newest beat was heard, on the monotonic clock. */
  private readonly beatHeard = new Map<string, number>();
  private readonly keys = new Map<string, KeySeen>();
  private labels = new Map<string, Labels>();
  /** The nodes taken out of the mesh: the page shows them removed. */
  private removals = new Map<string, RemovalSeen>();
  private readonly rows = new Map<string, { row: PageRow; key: string }>();
  private readonly dirty = new Set<string>();
  private readonly rowListeners = new Set<(message: RowsMessage) => void>();
  private readonly reportListeners = new Map<string, Set<(report: PageReport) => void>>();
  private readonly subs: Subscription[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private enrolments: Promise<Enrolments>;
  private pending: Heard[] | undefined = [];
  private relabel: NodeJS.Timeout | undefined;

  private constructor(private readonly options: FeedOptions) {
    this.enrolments = readEnrolments(options.nc);
  }

  /** Listens first, then reads what the streams hold, then applies what was heard meanwhile: nothing falls between. */
  static async start(options: FeedOptions): Promise<FleetFeed> {
    const feed = new FleetFeed(options);
    feed.listen();
    const read = await readFleet(options.nc, { verifyReport: fleetReportVerifier(feed.enrolments) });
    for (const r of read.reports) feed.reports.set(r.node, r);
    // A beat read from the stream was heard as long before now as the server stored it: its age is carried over once, then counted on the monotonic clock.
    const [wall, mono] = [options.now(), feed.monotonic()];
    for (const b of read.heartbeats) {
      feed.beats.set(b.node, b);
      feed.beatHeard.set(b.node, mono - Math.max(0, wall - b.storedAtMs));
    }
    for (const k of read.keys) feed.keys.set(k.node, k);
    feed.labels = labelsOf(await feed.enrolments);
    feed.removals = removalsOf(await feed.enrolments);
    const heard = feed.pending ?? [];
    feed.pending = undefined;
    for (const h of heard) feed.take(h);
    for (const node of feed.nodes()) feed.dirty.add(node);
    feed.flush();
    feed.timers.push(setInterval(() => feed.flush(), options.flushMs ?? 100));
    feed.timers.push(setInterval(() => feed.retick(), options.tickMs ?? 1000));
    return feed;
  }

  /** Every row, worst first, with the server's clock. */
  snapshot(): RowsMessage {
    const rows = [...this.rows.values()].map((r) => r.row);
    return { nowMs: this.options.now(), rows: rows.sort(fleetOrder), removed: [] };
  }

  /** The enrolments as last read: a node page checks its reports' signatures against them. */
  currentEnrolments(): Promise<Enrolments> {
    return this.enrolments;
  }

  row(node: string): PageRow | null {
    return this.rows.get(node)?.row ?? null;
  }

  /** Hears every batch of changed rows until the returned function is called. */
  onRows(listener: (message: RowsMessage) => void): () => void {
    this.rowListeners.add(listener);
    return () => this.rowListeners.delete(listener);
  }

  /** Hears every new report of one node, whole, until the returned function is called. */
  onReport(node: string, listener: (report: PageReport) => void): () => void {
    const set = this.reportListeners.get(node) ?? new Set();
    set.add(listener);
    this.reportListeners.set(node, set);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.reportListeners.delete(node);
    };
  }

  close(): void {
    for (const t of this.timers) clearInterval(t);
    clearTimeout(this.relabel);
    for (const s of this.subs) s.unsubscribe();
  }

  private listen(): void {
    const on = (subject: string, kind: Heard['kind']) =>
      this.subs.push(
        this.options.nc.subscribe(subject, {
          callback: (err, msg) => {
            if (err) return this.options.log.warn({ err, subject }, 'serve: a subscription failed');
            const heard = { kind, msg, atMs: this.options.now(), monoMs: this.monotonic() };
            if (this.pending) this.pending.push(heard);
            else this.take(heard);
          },
        }),
      );
    on(REPORTS_SUBJECTS, 'report');
    on(HEARTBEAT_SUBJECTS, 'heartbeat');
    on(DECLARATION_SUBJECTS, 'key');
    on(`$KV.${ENROLMENTS_BUCKET}.>`, 'enrolment');
  }

  private monotonic(): number {
    return (this.options.monotonic ?? (() => performance.now()))();
  }

  private take({ kind, msg, atMs, monoMs }: Heard): void {
    const message = { subject: msg.subject, streamSequence: 0, storedAt: new Date(atMs).toISOString(), bytes: msg.data, ...(msg.headers ? { headers: msg.headers } : {}) };
    if (kind === 'heartbeat') {
      const beat = heartbeatSeen(message);
      this.beats.set(beat.node, beat);
      this.beatHeard.set(beat.node, monoMs);
      this.dirty.add(beat.node);
    } else if (kind === 'key') {
      const node = msg.subject.slice(msg.subject.lastIndexOf('.') + 1);
      // A delete or purge is a marker without data: the mesh says nothing to the node now.
      if (msg.data.length === 0) this.keys.delete(node);
      else this.keys.set(node, keySeen(message));
      this.dirty.add(node);
    } else if (kind === 'enrolment') {
      this.readLabelsSoon();
    } else {
      void this.takeReport(message);
    }
  }

  private async takeReport(message: Parameters<typeof reportSeen>[0]): Promise<void> {
    try {
      const seen = await reportSeen(message, fleetReportVerifier(this.enrolments));
      const kept = this.reports.get(seen.node);
      // Checks end in any order; an older report never replaces a newer one.
      if (kept?.report && seen.report && seen.report.sequence < kept.report.sequence) return;
      this.reports.set(seen.node, seen);
      this.dirty.add(seen.node);
      const listeners = this.reportListeners.get(seen.node);
      if (listeners?.size) {
        const report = pageReportOf(message.bytes, seen.signature);
        if (report) for (const l of listeners) l(report);
      }
    } catch (err) {
      this.options.log.warn({ err, subject: message.subject }, 'serve: a report could not be read');
    }
  }

  /** An enrolment changed (a label, a key): every enrolment read again, once for a burst of changes. */
  private readLabelsSoon(): void {
    clearTimeout(this.relabel);
    this.relabel = setTimeout(() => {
      const fresh = readEnrolments(this.options.nc);
      fresh.then(
        (enrolments) => {
          this.enrolments = fresh;
          this.labels = labelsOf(enrolments);
          const before = [...this.removals.keys()];
          this.removals = removalsOf(enrolments);
          for (const node of before) this.dirty.add(node);
          for (const node of this.nodes()) this.dirty.add(node);
        },
        (err: unknown) => this.options.log.warn({ err }, 'serve: the enrolments could not be read'),
      );
    }, 300);
  }

  private nodes(): Set<string> {
    // An enrolled node is one the mesh knows before it has said or been sent anything: it has a row too.
    return new Set([...this.reports.keys(), ...this.beats.keys(), ...this.keys.keys(), ...this.removals.keys(), ...this.labels.keys()]);
  }

  private retick(): void {
    for (const node of this.rows.keys()) this.dirty.add(node);
  }

  /** Rows of the nodes heard from since the last flush, made again; those that differ go out. */
  private flush(): void {
    if (this.dirty.size === 0) return;
    const nowMs = this.options.now();
    const changed: PageRow[] = [];
    const removed: string[] = [];
    for (const node of this.dirty) {
      const one = (m: Map<string, { node: string }>) => (m.has(node) ? [m.get(node)!] : []);
      const beat = this.beats.get(node);
      const heartbeats = beat ? [{ ...beat, agoMs: Math.max(0, this.monotonic() - (this.beatHeard.get(node) ?? this.monotonic())) }] : [];
      const fleetRow = fleetRows({ reports: one(this.reports) as ReportSeen[], heartbeats, keys: one(this.keys) as KeySeen[], removed: one(this.removals) as RemovalSeen[], enrolled: this.labels.has(node) ? [node] : [], nowMs })[0];
      if (!fleetRow) {
        if (this.rows.delete(node)) removed.push(node);
        continue;
      }
      const row = pageRow(fleetRow, this.labels.get(node), nowMs);
      const key = rowKey(row);
      if (this.rows.get(node)?.key === key) continue;
      this.rows.set(node, { row, key });
      changed.push(row);
    }
    this.dirty.clear();
    if (changed.length === 0 && removed.length === 0) return;
    const message = { nowMs, rows: changed, removed };
    for (const l of this.rowListeners) l(message);
  }
}

function removalsOf(enrolments: Enrolments): Map<string, RemovalSeen> {
  return new Map(enrolments.removed().map((r) => [r.node, r]));
}

/** The labels of every enrolled node: its keys are the enrolled nodes, each with a row of its own. */
function labelsOf(enrolments: Enrolments): Map<string, Labels> {
  return new Map(enrolments.enrolled().map((e) => [e.node, e.enrolment.labels ?? {}]));
}
