import { orderIn } from '../../core/declaration/order.js';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { latestPerSubject, type LatestMessage } from '../../link/latest.js';
import { HEARTBEAT_SUBJECTS, HEARTBEATS_STREAM, REPORTS_STREAM, REPORTS_SUBJECTS } from '../../link/wire.js';
import { nodeOf, parse, type ReportVerifier } from './fleet-read.js';
import { deferredOf } from './deferred.js';
import type { PauseSeen, ReportHeard } from './rollout.js';

/** A report whose signature failed: not taken as its node's word. */
export interface Untrusted {
  node: string;
  sequence?: number;
  reason: string;
}

type RawReport = Omit<Partial<ReportHeard>, 'deferred'> & { error?: { subjects?: Array<{ resource?: string }> }; steps?: unknown };

function reportOf(value: unknown): ReportHeard | undefined {
  const r = value as RawReport | undefined;
  if (typeof r !== 'object' || r === null || typeof r.sequence !== 'number' || !['converged', 'failed', 'refused'].includes(r.outcome as string)) return undefined;
  const declaration = orderIn(r.declaration) ?? null;
  // A refusal names its resource among its subjects when it has no resource of its own.
  const resource = r.error?.resource ?? r.error?.subjects?.find((s) => s.resource)?.resource;
  const deferred = deferredOf(r.steps);
  return { sequence: r.sequence, declaration, outcome: r.outcome!, ...(r.error && typeof r.error.message === 'string' ? { error: { message: r.error.message, ...(resource ? { resource } : {}) } } : {}), ...(deferred.length ? { deferred } : {}) };
}


/** `paused` of a heartbeat: the pause, null when the beat says it is not paused, undefined when the beat does not say. */
function pauseOf(value: unknown): PauseSeen | null | undefined {
  const p = (value as { paused?: unknown } | undefined)?.paused;
  if (p === null) return null;
  if (typeof p !== 'object' || p === undefined) return undefined;
  const { reason, by, since, until } = p as Record<string, unknown>;
  if (typeof reason !== 'string' || typeof by !== 'string' || typeof since !== 'string') return undefined;
  return { reason, by, since, ...(typeof until === 'string' ? { until } : {}) };
}

/**
 * What the fleet says while a rollout waits: every node's newest report and whether its heartbeat says
 * it is paused. Listens first (reports and heartbeats as they are published), then reads what the
 * streams already hold, so no report falls between the two. A report's signature is checked as the
 * fleet view checks it when the rollout is about to take it as a node's word (`trusted`), not when it
 * is heard: most newest reports of a fleet at start are of older declarations and decide nothing. One
 * that fails is set aside and said, never taken as the node's. `nodes`: the nodes it keeps (all when not
 * given: a rollout begins to listen while it is still choosing them).
 */
export class FleetListener {
  readonly reports = new Map<string, ReportHeard>();
  readonly paused = new Map<string, PauseSeen | null>();
  readonly untrusted: Untrusted[] = [];
  private readonly messages = new Map<string, LatestMessage>();
  private readonly newest = new Map<string, number>();
  private readonly verified = new Map<string, number>();
  /** Nodes heard from since the last `take()`. */
  private news = new Set<string>();
  private wake: (() => void) | undefined;
  private subs: Subscription[] = [];

  constructor(private readonly nc: NatsConnection, private readonly verify: ReportVerifier, private readonly nodes?: Set<string>) {}

  async start(): Promise<void> {
    this.subs.push(this.nc.subscribe(REPORTS_SUBJECTS, { callback: (_, m) => this.hearReport({ subject: m.subject, bytes: m.data, headers: m.headers, storedAt: new Date().toISOString(), streamSequence: 0 }) }));
    this.subs.push(this.nc.subscribe(HEARTBEAT_SUBJECTS, { callback: (_, m) => this.hearBeat(m.subject, m.data) }));
    await this.nc.flush();
    const orNone = (p: Promise<Map<string, LatestMessage>>) => p.catch((err: { code?: number }) => (err.code === 10059 ? new Map<string, LatestMessage>() : Promise.reject(err)));
    const [reports, beats] = await Promise.all([orNone(latestPerSubject(this.nc, REPORTS_STREAM, REPORTS_SUBJECTS)), orNone(latestPerSubject(this.nc, HEARTBEATS_STREAM, HEARTBEAT_SUBJECTS))]);
    for (const m of beats.values()) if (!this.paused.has(nodeOf(m.subject))) this.hearBeat(m.subject, m.bytes);
    for (const m of reports.values()) this.hearReport(m);
  }

  /** Nodes heard from since the last call, waiting up to `ms` for one if there are none yet. */
  async take(ms: number): Promise<Set<string>> {
    if (this.news.size === 0 && ms > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
    const news = this.news;
    this.news = new Set();
    return news;
  }

  /**
   * Whether the node's newest report may be taken as its word: its signature checked once. One that fails
   * is set aside (said in `untrusted`) until the node reports again.
   */
  async trusted(node: string): Promise<boolean> {
    const report = this.reports.get(node);
    const message = this.messages.get(node);
    if (!report || !message) return false;
    if (this.verified.get(node) === report.sequence) return true;
    const verdict = await this.verify(node, message);
    if (this.reports.get(node) !== report) return this.trusted(node);
    if (verdict.verdict === 'failed') {
      this.untrusted.push({ node, sequence: report.sequence, reason: verdict.reason });
      this.reports.delete(node);
      return false;
    }
    this.verified.set(node, report.sequence);
    return true;
  }

  close(): void {
    for (const s of this.subs) s.unsubscribe();
  }

  private heard(node: string): void {
    this.news.add(node);
    this.wake?.();
  }

  /** A report newer than any heard of its node (reports come in their host's order, but the catch-up read may come after a live one). */
  private hearReport(message: LatestMessage): void {
    const node = nodeOf(message.subject);
    if (this.nodes && !this.nodes.has(node)) return;
    const report = reportOf(parse(message.bytes));
    if (!report || (this.newest.get(node) ?? -1) >= report.sequence) return;
    this.newest.set(node, report.sequence);
    this.reports.set(node, report);
    this.messages.set(node, message);
    this.heard(node);
  }

  private hearBeat(subject: string, bytes: Uint8Array): void {
    const node = nodeOf(subject);
    if (this.nodes && !this.nodes.has(node)) return;
    const paused = pauseOf(parse(bytes));
    const before = this.paused.get(node);
    this.paused.set(node, paused ?? null);
    if (JSON.stringify(before ?? null) !== JSON.stringify(paused ?? null)) this.heard(node);
  }
}
