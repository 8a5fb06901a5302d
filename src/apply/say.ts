import type { Logger } from '../system/log.js';
import type { Report } from '../report/report.js';

/**
 * The apply's detail (what it wrote, held, retired, left) reaches the log on every path through
 * this one helper: the one-shot commands and the daemon alike. Silence is never a default.
 */
export function sayApplyDetail(log: Logger, report: Report): void {
  const counts: Record<string, number> = {};
  for (const step of report.steps) {
    counts[step.status] = (counts[step.status] ?? 0) + 1;
    if (step.status === 'unchanged') continue;
    log.info({ resource: step.resource, target: step.target, status: step.status, actions: step.actions, detail: step.detail }, `${step.status} ${step.target}${step.detail ? `: ${step.detail}` : ''}`);
  }
  log.info({ report: report.sequence, outcome: report.outcome, trigger: report.trigger, declaration: report.declaration, counts, error: report.error }, `apply ${report.outcome}`);
}
