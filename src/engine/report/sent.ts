import type { ResourceType } from '../../core/declaration/schema.js';
import { compareOrder } from '../../core/declaration/order.js';
import type { Outcome, Report } from './report.js';

/** Where the steps a sent report leaves out can be read, on the host. */
export const FULL_REPORT_WHERE = 'on the host: mesh-host status --last-report (the newest reports are kept whole under the state directory, reports/)';

/** What a sent report left out to stay under the server's payload limit. */
export interface Omitted {
  /** Steps not listed (their counts by status stay in `counts`). */
  steps: number;
  /** Bytes the whole report would have taken. */
  bytes: number;
  /** The limit it was fitted to. */
  limit: number;
  where: string;
}

/** Reports folded into this one because the outbox was past its bound. */
export interface Folded {
  reports: number;
  /** The folded reports' sequences, first and last (this report's own sequence is after them). */
  first: number;
  last: number;
  outcomes: Partial<Record<Outcome, number>>;
  /** The folded reports' steps that were not unchanged, counted by status. */
  steps: Record<string, number>;
  /** The declarations the folded reports were about, oldest and newest. */
  declarations: Array<NonNullable<Report['declaration']>>;
  /** Failures and refusals among them, newest last (at most a few, the rest counted). */
  errors: Array<{ sequence: number; outcome: Outcome; message: string }>;
}

/**
 * A report as the mesh receives it: every step that did something, failed, was held or skipped, and the
 * unchanged ones counted by resource type, so its size follows what happened, not the footprint. The
 * full step list stays on the host.
 */
export interface SentReport extends Omit<Report, 'steps'> {
  steps: Report['steps'];
  /** Unchanged steps by resource type. */
  unchanged: Partial<Record<ResourceType, number>>;
  /** Every step by status, listed or not. */
  counts: Record<string, number>;
  omitted?: Omitted;
  folded?: Folded;
}

/** The one function that turns an apply's full step list into the report the mesh receives. */
export function sentReport(report: Report): SentReport {
  const unchanged: Partial<Record<ResourceType, number>> = {};
  const counts: Record<string, number> = {};
  const steps: Report['steps'] = [];
  for (const step of report.steps) {
    counts[step.status] = (counts[step.status] ?? 0) + 1;
    if (step.status === 'unchanged') unchanged[step.type] = (unchanged[step.type] ?? 0) + 1;
    else steps.push(step);
  }
  return { ...report, steps, unchanged, counts };
}

/** Whether a value read back from the outbox is already in the sent shape (an outbox from an older version holds full reports). */
function isSent(value: Report | SentReport): value is SentReport {
  return 'counts' in value && 'unchanged' in value;
}

export function asSent(value: Report | SentReport): SentReport {
  return isSent(value) ? value : sentReport(value);
}

const encode = (r: SentReport) => Buffer.from(JSON.stringify(r));

/**
 * The report's bytes, at most `limit`: past it, steps are left out from the end (the counts stay
 * whole) and the report says how many, how large it was and where the rest is. Said lines and held
 * facts are cut last, since they are what an operator reads first. Never larger than the limit.
 */
export function fitReport(report: SentReport, limit: number): Buffer {
  const whole = encode(report);
  if (whole.length <= limit) return whole;
  const omitted = (steps: number): Omitted => ({ steps, bytes: whole.length, limit, where: FULL_REPORT_WHERE });
  // Binary search over how many steps to keep: the largest prefix that fits with the note.
  let lo = 0;
  let hi = report.steps.length;
  const withSteps = (n: number, base: SentReport = report) => encode({ ...base, steps: base.steps.slice(0, n), omitted: omitted(report.steps.length - n) });
  if (withSteps(0).length <= limit) {
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (withSteps(mid).length <= limit) lo = mid;
      else hi = mid - 1;
    }
    return withSteps(lo);
  }
  // Even without steps it is too large (a great many said lines or held facts): keep their heads.
  const said = report.said.slice(0, 20).map((s) => s.slice(0, 500));
  const held = report.facts.held.slice(0, 20);
  const bare: SentReport = { ...report, steps: [], said: [...said, ...(report.said.length > said.length ? [`… ${report.said.length - said.length} more said lines ${FULL_REPORT_WHERE}`] : [])], facts: { ...report.facts, held }, omitted: omitted(report.steps.length) };
  const bytes = encode(bare);
  if (bytes.length <= limit) return bytes;
  // The last resort: who, which sequence, the outcome and the counts, always small.
  const minimal = { node: report.node, sequence: report.sequence, trigger: report.trigger, declaration: report.declaration, mode: report.mode, outcome: report.outcome, counts: report.counts, unchanged: report.unchanged, steps: [], said: [], facts: { held: [], links: [], filters: [], foundFirewall: null }, startedAt: report.startedAt, finishedAt: report.finishedAt, omitted: omitted(report.steps.length), ...(report.error ? { error: { ...report.error, message: report.error.message.slice(0, 1000) } } : {}) };
  return Buffer.from(JSON.stringify(minimal));
}

const MAX_FOLDED_ERRORS = 10;

/**
 * Several waiting reports made into one: the newest of them, carrying what the older ones said in
 * `folded` (how many, their sequences, outcomes, step counts, declarations and errors). Its sequence is
 * the newest one's, so sequences stay increasing. Nothing folded vanishes without a trace.
 */
export function foldReports(reports: SentReport[]): SentReport {
  const sorted = [...reports].sort((a, b) => a.sequence - b.sequence);
  const newest = sorted.at(-1)!;
  const older = sorted.slice(0, -1);
  const into: Folded = newest.folded ? structuredClone(newest.folded) : { reports: 0, first: Infinity, last: 0, outcomes: {}, steps: {}, declarations: [], errors: [] };
  for (const r of older) {
    const inner = r.folded;
    into.reports += 1 + (inner?.reports ?? 0);
    into.first = Math.min(into.first, inner?.first ?? r.sequence, r.sequence);
    into.last = Math.max(into.last, r.sequence);
    into.outcomes[r.outcome] = (into.outcomes[r.outcome] ?? 0) + 1;
    for (const [o, n] of Object.entries(inner?.outcomes ?? {})) into.outcomes[o as Outcome] = (into.outcomes[o as Outcome] ?? 0) + n;
    for (const [status, n] of Object.entries(r.counts)) if (status !== 'unchanged') into.steps[status] = (into.steps[status] ?? 0) + n;
    for (const [status, n] of Object.entries(inner?.steps ?? {})) into.steps[status] = (into.steps[status] ?? 0) + n;
    if (r.declaration) into.declarations.push(r.declaration);
    into.declarations.push(...(inner?.declarations ?? []));
    into.errors.push(...(inner?.errors ?? []));
    if (r.error) into.errors.push({ sequence: r.sequence, outcome: r.outcome, message: r.error.message.slice(0, 500) });
  }
  // The oldest and newest declaration say the range; the errors keep the newest few.
  const byOrder = into.declarations.sort(compareOrder);
  into.declarations = byOrder.length > 2 ? [byOrder[0]!, byOrder.at(-1)!] : byOrder;
  into.errors = into.errors.sort((a, b) => a.sequence - b.sequence).slice(-MAX_FOLDED_ERRORS);
  return { ...newest, folded: into };
}
