import { mkdirSync, readFileSync, readdirSync, statSync, unlinkSync, writeFileSync, renameSync } from 'node:fs';
import { mkdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureDirectoryDurably, fsyncDirectory, fsyncDirectoryAsync, writeDurably, writeDurablyAsync, writeWholeAsync } from '../../core/system/durable.js';
import { letGo } from '../../core/system/yielder.js';
import type { Report } from './report.js';
import { asSent, fitReport, foldReports, sentReport, type SentReport } from './sent.js';

export const OUTBOX_DIR = 'outbox';
/** Whole reports (every step) kept on the host, newest last: `mesh-host status --last-report`. */
export const FULL_REPORTS_DIR = 'reports';
const NAME = /^(\d{12})\.json$/;
/** A whole report's copy cut short before its rename (see keepWholeAsync). */
export const isWholeReportLeftover = (name: string) => /^\d{12}\.json\.tmp$/.test(name);
const nameOf = (sequence: number) => `${String(sequence).padStart(12, '0')}.json`;

/** The whole copies numbered past a sequence (names in the whole reports' folder). */
export function fullReportsAhead(stateDir: string, sequence: number): string[] {
  let names: string[];
  try {
    names = readdirSync(join(stateDir, FULL_REPORTS_DIR));
  } catch {
    return [];
  }
  return names.filter((name) => Number(NAME.exec(name)?.[1] ?? 0) > sequence);
}

export interface OutboxBounds {
  /** Reports waiting at most; past it the oldest are folded into one. */
  maxReports: number;
  /** Bytes waiting at most; past it the oldest are folded into one. */
  maxBytes: number;
  /** Whole reports kept on the host. */
  keepFull: number;
}

/** What a report's publish adds to its bytes: the subject, the message id and a signature header. */
export const REPORT_HEADROOM = 4096;

export const DEFAULT_OUTBOX_BOUNDS: OutboxBounds = { maxReports: 1000, maxBytes: 64 * 1024 * 1024, keepFull: 16 };

/**
 * Reports made and not yet acknowledged, on disk, in the order made: a report is written here
 * (durably) before it is sent, and removed only once the mesh acknowledged it. A crash at any point
 * leaves it to be sent again with the same message id, which the server stores once.
 *
 * What waits is the sent shape (what changed, failed, was held or skipped; the unchanged counted by
 * type); the whole report is kept beside it for the host's own reading. The outbox is bounded: past
 * its count or bytes, the oldest waiting reports are folded into one that says what was folded, so a
 * host cut off from the mesh for months neither fills its disk nor loses a report without a trace.
 */
export class Outbox {
  private readonly dir: string;
  private readonly fullDir: string;
  readonly bounds: OutboxBounds;

  /** Removals made, and how many of them a fsync of the directory has made durable. */
  private removals = 0;
  private flushed = 0;
  /** The store's save that counts the newest report: no removal is made before it has ended (see counted()). */
  private saving: Promise<unknown> = Promise.resolve();
  /** The whole copies being written, one after another (see wholeKept). */
  private keepingWhole: Promise<void> = Promise.resolve();
  /** Told of a report that may be sent now, by the apply that commits it (see whenCommitted). */
  onCommitted: ((sequence: number) => void) | undefined;

  constructor(stateDir: string, bounds: Partial<OutboxBounds> = {}) {
    this.dir = join(stateDir, OUTBOX_DIR);
    this.fullDir = join(stateDir, FULL_REPORTS_DIR);
    this.bounds = { ...DEFAULT_OUTBOX_BOUNDS, ...bounds };
  }

  add(report: Report): void {
    ensureDirectoryDurably(this.dir);
    try {
      mkdirSync(this.fullDir, { recursive: true, mode: 0o700 });
      const path = join(this.fullDir, nameOf(report.sequence));
      writeFileSync(`${path}.tmp`, JSON.stringify(report), { mode: 0o600 });
      renameSync(`${path}.tmp`, path);
      for (const old of this.wholeBeyondBound()) unlinkSync(old);
    } catch {
      // a convenience copy: the report itself goes on to the outbox
    }
    writeDurably(join(this.dir, nameOf(report.sequence)), Buffer.from(JSON.stringify(sentReport(report))), 0o600);
    this.fold();
  }

  /**
   * add(), with the disk's waits off the event loop: the apply's report of a large declaration is a
   * megabyte whole, and its writes and fsyncs would otherwise hold the daemon's status answers. With
   * `renameAfter`, the entry is written and fsynced beside it and renamed into the outbox only once it
   * has settled; if it rejects, the entry is not made.
   */
  async addAsync(report: Report, renameAfter?: Promise<unknown>): Promise<void> {
    // The whole copy is written beside the durable one, and nothing of the report's commit or send waits
    // for it (see wholeKept); the copies are written one after another, in the order made.
    this.keepingWhole = this.keepingWhole.then(() => this.keepWholeAsync(report));
    const bytes = Buffer.from(JSON.stringify(sentReport(report)));
    // The write's fsync of the directory makes every removal made before it began durable too.
    const removals = this.removals;
    await intoDirectory(this.dir, () => writeDurablyAsync(join(this.dir, nameOf(report.sequence)), bytes, 0o600, renameAfter));
    this.flushed = Math.max(this.flushed, removals);
    this.fold();
  }

  /** The whole copies of the reports added so far are written (or given up: a convenience copy). */
  wholeKept(): Promise<void> {
    return this.keepingWhole;
  }

  /**
   * The whole report for the host's own reading (see wholeBeyondBound); a failure here loses only that.
   * Its stringifying (a megabyte at 10,000 steps) waits a turn, so that a daemon answers between it and
   * the sent report's.
   */
  private async keepWholeAsync(report: Report): Promise<void> {
    await letGo();
    try {
      const path = join(this.fullDir, nameOf(report.sequence));
      const text = JSON.stringify(report);
      await intoDirectory(this.fullDir, () => writeWholeAsync(path, Buffer.from(text)));
      for (const old of this.wholeBeyondBound()) await unlink(old);
    } catch {
      // a convenience copy: the report itself goes on to the outbox
    }
  }

  /**
   * The whole reports past the bound, oldest first. A whole report is the host's own reading, written
   * whole (rename) without fsync, since the mesh's copy is the record and losing this one in a crash
   * loses only a convenience.
   */
  private wholeBeyondBound(): string[] {
    const kept = sequencesIn(this.fullDir);
    return kept.slice(0, Math.max(0, kept.length - this.bounds.keepFull)).map((old) => join(this.fullDir, nameOf(old)));
  }

  /** The newest whole report kept on the host, or the one of a given sequence if still kept. */
  wholeReport(sequence?: number): Report | undefined {
    const kept = sequencesIn(this.fullDir);
    const wanted = sequence ?? kept.at(-1);
    if (wanted === undefined || !kept.includes(wanted)) return undefined;
    return JSON.parse(readFileSync(join(this.fullDir, nameOf(wanted)), 'utf8')) as Report;
  }

  /**
   * The store's save that counts a report just written here: an acknowledged report's removal waits
   * for it to end, so that no power cut can leave a head that has not counted a report the outbox no
   * longer holds (its sequence would be spent again, and the stream drop the new report as a duplicate).
   */
  countedBy(save: Promise<unknown>): void {
    this.saving = save.catch(() => undefined);
  }

  /**
   * Who is told of a report that may be sent before its store's save ends: its entry durable and the
   * head that counts it renamed, though that rename is not yet durable (a power cut then leaves the old
   * head and the entry, which the next start counts and sends again under the same message id).
   */
  whenCommitted(sendable: (sequence: number) => void): () => void {
    this.onCommitted = sendable;
    return () => {
      if (this.onCommitted === sendable) this.onCommitted = undefined;
    };
  }

  /** Report sequences waiting, oldest first. */
  pending(): number[] {
    return sequencesIn(this.dir);
  }

  /** A waiting report as stored (the sent shape). */
  read(sequence: number): SentReport {
    return asSent(JSON.parse(readFileSync(join(this.dir, nameOf(sequence)), 'utf8')) as Report | SentReport);
  }

  /**
   * The bytes to publish for a waiting report, fitted under `limit` (the server's payload limit, less
   * what the publish adds); undefined when it is no longer waiting (acknowledged, or folded into a
   * later one, which carries it).
   */
  message(sequence: number, limit = Infinity): Buffer | undefined {
    let report: SentReport;
    try {
      report = this.read(sequence);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    return fitReport(report, limit);
  }

  /**
   * Acknowledged: gone from the outbox. The removal is made durable by the directory's next fsync, the
   * next report's write or flush(), not by one of its own: that fsync waited on the disk beside the next
   * delivery's writes. A power cut before it sends the report again with its message id, as a crash
   * between the acknowledgement and the removal always could: the stream stores it once within its
   * duplicate window, and after it the same report again, never a lost one. It is made only once the
   * store's save that counts the newest report has ended (countedBy): that report may be sent first.
   */
  async remove(sequence: number): Promise<void> {
    await this.saving;
    try {
      await unlink(join(this.dir, nameOf(sequence)));
      this.removals++;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }

  /** The removals not yet made durable by a fsync of the directory, flushed (off the event loop); nothing when there are none. */
  async flush(): Promise<void> {
    const removals = this.removals;
    if (removals === this.flushed) return;
    await fsyncDirectoryAsync(this.dir);
    this.flushed = Math.max(this.flushed, removals);
  }

  /** The waiting reports' count and bytes. */
  size(): { reports: number; bytes: number } {
    let bytes = 0;
    const waiting = this.pending();
    for (const s of waiting) bytes += sizeOf(join(this.dir, nameOf(s)));
    return { reports: waiting.length, bytes };
  }

  /**
   * Past a bound, the oldest waiting reports (all but the newest, at least half of them) are folded
   * into one, written under the newest folded one's sequence before the others are removed: a crash in
   * between leaves a report said twice, never one lost.
   */
  private fold(): void {
    const waiting = this.pending();
    const sizes = waiting.map((s) => sizeOf(join(this.dir, nameOf(s))));
    const total = sizes.reduce((a, b) => a + b, 0);
    if (waiting.length <= this.bounds.maxReports && total <= this.bounds.maxBytes) return;
    // Fold the oldest half of what waits (never the newest report), so a long outage folds rarely.
    const count = Math.max(2, Math.min(waiting.length - 1, Math.ceil(waiting.length / 2)));
    if (count < 2 || waiting.length < 3) return;
    const folding = waiting.slice(0, count);
    const folded = foldReports(folding.map((s) => this.read(s)));
    writeDurably(join(this.dir, nameOf(folded.sequence)), Buffer.from(JSON.stringify(folded)), 0o600);
    for (const s of folding) if (s !== folded.sequence) unlinkSync(join(this.dir, nameOf(s)));
    fsyncDirectory(this.dir);
  }
}

/**
 * A write into a directory of the store, the directory made (0700) only when the write finds it missing:
 * making it before every write was a round trip to libuv's threads on every apply.
 */
async function intoDirectory(dir: string, write: () => Promise<void>): Promise<void> {
  try {
    await write();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await write();
  }
}

function sequencesIn(dir: string): number[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((n) => {
    const m = NAME.exec(n);
    return m ? [Number(m[1])] : [];
  }).sort((a, b) => a - b);
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
