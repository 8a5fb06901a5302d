import type { Report, Trigger } from '../report/report.js';
import { filtersNotRead } from '../../machine/filters/filter-read.js';
import type { RefusalKind, Subject } from '../../core/system/errors.js';
import type { HostEnv } from './host-env.js';

/** A refusal reads nothing of the machine: its filters are said not read, never reported as none. */
function firewallFactsOfRefusal(env: HostEnv, notRead = 'not read: the declaration was refused before anything on the machine was read'): Pick<Report['facts'], 'filters' | 'foundFirewall'> {
  if (!env.firewall) return { filters: [], foundFirewall: null };
  return { filters: filtersNotRead(notRead), foundFirewall: { tools: [], notRead } };
}

/**
 * A report for what was refused before anything was touched (a stale, forged or wrong-mode
 * declaration): counted by kind in the store, and reported like any apply.
 */
export function reportRefusal(env: HostEnv, refusal: { kind: RefusalKind; message: string; trigger: Trigger; declaration?: Report['declaration']; subjects?: Subject[] }): Report {
  env.store.updateHead((state) => {
    state.refusals[refusal.kind] = (state.refusals[refusal.kind] ?? 0) + 1;
  });
  const report = reportUnapplied(env, { outcome: 'refused', message: refusal.message, trigger: refusal.trigger, ...(refusal.declaration ? { declaration: refusal.declaration } : {}), ...(refusal.subjects?.length ? { subjects: refusal.subjects } : {}) });
  env.log.warn({ kind: refusal.kind, report: report.sequence, declaration: refusal.declaration }, `refused: ${refusal.message}`);
  return report;
}

/**
 * A report of something that ended without an apply (a refusal, a release that failed its trial): the
 * next report sequence, kept in the outbox before the store is saved, like an apply's.
 */
export function reportUnapplied(env: HostEnv, what: { outcome: Report['outcome']; message: string; trigger: Trigger; declaration?: Report['declaration']; said?: string[]; notRead?: string; subjects?: Subject[] }): Report {
  const at = env.clock.now().toISOString();
  let report!: Report;
  env.store.updateHead((state) => {
    state.reportSequence += 1;
    report = {
      node: env.node,
      sequence: state.reportSequence,
      trigger: what.trigger,
      declaration: what.declaration ?? null,
      mode: state.mode ?? null,
      outcome: what.outcome,
      error: { message: what.message, ...(what.subjects ? { subjects: what.subjects } : {}) },
      steps: [],
      said: what.said ?? [],
      facts: { held: state.held, links: [], ...firewallFactsOfRefusal(env, what.notRead) },
      startedAt: at,
      finishedAt: at,
    };
    state.lastOutcome = { outcome: what.outcome, at, message: what.message, reportSequence: state.reportSequence };
  });
  env.outbox?.add(report);
  env.store.save();
  return report;
}
