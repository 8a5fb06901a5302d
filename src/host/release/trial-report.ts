import { reportUnapplied, type HostEnv } from '../../engine/apply/apply.js';
import { markOf } from '../../core/declaration/order.js';
import type { Report } from '../../engine/report/report.js';
import type { FailedTrial } from './pipe.js';

/** The report the resumed host makes of a release that failed its trial: why, and what runs again. */
export function reportFailedTrial(env: HostEnv, trial: FailedTrial): Report {
  const applied = env.store.state.lastApplied;
  const message = `release ${trial.release} failed its trial: ${trial.reason}; release ${trial.running} runs again, and ${trial.release} is not tried again until the declaration names another release`;
  const report = reportUnapplied(env, {
    outcome: 'failed',
    message,
    trigger: 'trial',
    ...(applied ? { declaration: markOf(applied) } : {}),
    said: [`release ${trial.release} on trial: ${trial.reason}`, `release ${trial.running} resumed`],
  });
  env.log.error({ release: trial.release, reason: trial.reason, running: trial.running, report: report.sequence }, message);
  return report;
}
