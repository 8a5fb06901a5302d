import type { Logger } from '../../core/system/log.js';
import type { Report } from '../report/report.js';
import type { StepResult } from '../converge/handler-types.js';

/**
 * Steps said one line each, at most: a first apply of 10,000 files would write 10,000 lines, each a
 * synchronous write that waits while the journal's pipe is full, and the daemon would stop answering
 * meanwhile. The rest are counted in one line; the report carries every step.
 */
export const STEP_LINES = 100;

/**
 * The apply's detail (what it wrote, held, retired, left) reaches the log on every path through
 * this one helper: the one-shot commands and the daemon alike. Silence is never a default.
 */
export function sayApplyDetail(log: Logger, report: Report, steps: { changed: StepResult[]; unchanged: number }): void {
  const counts: Record<string, number> = {};
  if (steps.unchanged > 0) counts.unchanged = steps.unchanged;
  let said = 0;
  const unsaid: Record<string, number> = {};
  for (const step of steps.changed) {
    counts[step.status] = (counts[step.status] ?? 0) + 1;
    if (step.status === 'unchanged') continue;
    // Failures and holds are always said: they are what an operator looks for.
    if (said >= STEP_LINES && step.status !== 'failed' && step.status !== 'held') {
      unsaid[step.status] = (unsaid[step.status] ?? 0) + 1;
      continue;
    }
    said += 1;
    log.info({ resource: step.resource, target: step.target, status: step.status, changes: step.changes, detail: step.detail }, `${step.status} ${step.target}${step.detail ? `: ${step.detail}` : ''}`);
  }
  const more = Object.entries(unsaid).map(([status, n]) => `${n} more ${status}`);
  if (more.length > 0) log.info({ report: report.sequence, unsaid }, `${more.join(', ')}: not said one by one (the report lists every step)`);
  log.info({ report: report.sequence, outcome: report.outcome, trigger: report.trigger, declaration: report.declaration, counts, error: report.error }, `apply ${report.outcome}`);
}
