import { createHash } from 'node:crypto';
import type { Facts, Report } from './report.js';
import type { StepResult } from '../converge/handler-types.js';

/**
 * The machine's fingerprint: what it holds, its found firewall, which links face outside, its filters
 * (the facts a report carries). Addresses and states that do not change what the mesh composes are
 * left out, so a fingerprint moves only when there is something to say.
 */
export function fingerprintOf(facts: Facts): string {
  const outside = facts.links.filter((l) => l.facesOutside).map((l) => ({ name: l.name, why: [...l.why].sort() })).sort((a, b) => a.name.localeCompare(b.name));
  const held = facts.held.map((h) => `${h.id} ${h.target}`).sort();
  const canonical = JSON.stringify({ held, foundFirewall: facts.foundFirewall ?? null, outside, filters: facts.filters });
  return `sha256:${createHash('sha256').update(canonical).digest('hex')}`;
}

/**
 * Whether a report is made. Every apply a delivery, genesis or an operator asked for reports. A
 * reconcile speaks only when it has something to say: it changed something, it failed, or the
 * machine's fingerprint differs from the last one reported. (A converged machine holds nothing and
 * has no found firewall: without its links in the fingerprint it could never speak unasked, and the
 * mesh composes nothing for a machine that has not said which links face outside.)
 */
export function shouldSpeak(report: Pick<Report, 'trigger' | 'outcome' | 'facts'> & { steps: ReadonlyArray<Pick<StepResult, 'status'>> }, lastFingerprint: string | undefined): boolean {
  if (report.trigger !== 'reconcile') return true;
  if (report.outcome !== 'converged') return true;
  if (report.steps.some((s) => s.status === 'done' || s.status === 'failed')) return true;
  return fingerprintOf(report.facts) !== lastFingerprint;
}
