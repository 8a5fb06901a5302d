import { describeOrder, orderIn } from '../../core/declaration/order.js';
import { formatStep } from '../../engine/report/report.js';
import type { Step } from '../../engine/converge/handler-types.js';

/** A report as the wire carries it, read loosely: the control side prints what it finds. */
export interface ReportSeenAs {
  node?: string;
  sequence?: number;
  trigger?: string;
  outcome?: string;
  declaration?: { epoch?: number; sequence?: number } | null;
  error?: { resource?: string; message?: string };
  steps?: Array<Step & { status?: string; resource?: string; detail?: string }>;
  unchanged?: Record<string, number>;
  said?: string[];
  finishedAt?: string;
  trust?: { verdict?: string; reason?: string };
}

/** Which reports a reader asked for: `--since`, `--until`, `--outcome`, `--resource`. */
export interface ReportFilter {
  sinceMs?: number;
  untilMs?: number;
  outcomes?: string[];
  /** A resource's id or its target (a path, a unit, a container's name). */
  resource?: string;
}

const stepsOf = (r: ReportSeenAs) => (Array.isArray(r.steps) ? r.steps : []);
const touches = (s: { resource?: string; target?: string }, resource: string) => s.resource === resource || s.target === resource;

/** Whether the report is one the filter asks for: in the time, of the outcome, with a step of the resource that did something (or its error). */
export function reportMatches(r: ReportSeenAs, f: ReportFilter): boolean {
  const at = typeof r.finishedAt === 'string' ? Date.parse(r.finishedAt) : NaN;
  if (f.sinceMs !== undefined && !(at >= f.sinceMs)) return false;
  if (f.untilMs !== undefined && !(at < f.untilMs)) return false;
  if (f.outcomes && !f.outcomes.includes(String(r.outcome))) return false;
  if (f.resource !== undefined && !stepsOf(r).some((s) => s.status !== 'unchanged' && touches(s, f.resource!)) && r.error?.resource !== f.resource) return false;
  return true;
}

/** `4 unchanged, 3 done`: the steps counted by status (a report carries the unchanged as counts). */
function tally(r: ReportSeenAs): string {
  const counts = new Map<string, number>();
  const unchanged = Object.values(r.unchanged ?? {}).reduce((a, n) => a + n, 0);
  if (unchanged) counts.set('unchanged', unchanged);
  for (const s of stepsOf(r)) counts.set(String(s.status), (counts.get(String(s.status)) ?? 0) + 1);
  return [...counts].map(([status, n]) => `${n} ${status}`).join(', ') || 'no steps';
}

/**
 * A report as lines a person reads: when, which node, its number, what set it off and how it ended,
 * the declaration it was about; then each step that did something (only the resource's, when the filter
 * names one), its error, and a signature that did not verify.
 */
export function reportLines(r: ReportSeenAs, f: ReportFilter = {}): string[] {
  const d = orderIn(r.declaration);
  const about = d ? `, declaration ${describeOrder(d)}` : '';
  const lines = [`${r.finishedAt ?? '?'}  ${r.node ?? '?'}  report ${r.sequence ?? '?'}: ${r.trigger ?? '?'} ${r.outcome ?? '?'} (${tally(r)})${about}`];
  for (const s of stepsOf(r)) {
    if (s.status === 'unchanged' || (f.resource !== undefined && !touches(s, f.resource))) continue;
    lines.push(`  ${String(s.status).padEnd(8)} ${Array.isArray(s.changes) ? formatStep(s) : s.target} [${s.type} ${s.resource}]${s.detail ? ` — ${s.detail}` : ''}`);
  }
  if (r.error?.message) lines.push(`  error: ${r.error.resource ? `${r.error.resource}: ` : ''}${r.error.message}`);
  if (r.trust && r.trust.verdict !== 'verified') lines.push(`  signature ${r.trust.verdict}${r.trust.reason ? `: ${r.trust.reason}` : ''}`);
  return lines;
}
