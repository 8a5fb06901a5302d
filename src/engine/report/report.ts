import type { Mark } from '../../core/declaration/order.js';
import type { Mode } from '../../core/declaration/schema.js';
import type { Subject } from '../../core/system/errors.js';
import type { Step, StepResult } from '../converge/handler-types.js';
import { wordsOf, type Readable } from './words.js';
import type { HeldEntry } from '../../core/store/state.js';
import type { Link } from '../../machine/inventory/net-links.js';
import type { FilterEntry, FoundFirewall } from '../../machine/filters/filter-types.js';

/** `trial`: the report of a release that failed its trial, made by the host that resumed. */
export type Trigger = 'apply' | 'genesis' | 'reconcile' | 'delivery' | 'trial';
export type Outcome = 'converged' | 'failed' | 'refused';

export interface Plan {
  /** Every step, its changes as data and as words (`actions`, for the wire's readers). */
  steps: Array<Readable<Step>>;
  /** With `--diff`: a unified diff of each file whose content changes (never of a sensitive one). */
  diffs?: FileDiff[];
  /**
   * For printing, not carried in JSON (not enumerable): how many steps and which change something,
   * without a step made for each resource found as declared (a no-op over 10,000 files makes none).
   */
  readonly summary?: PlanSummary;
}

export interface PlanSummary {
  total: number;
  changing: () => Array<Readable<Step>>;
}

export interface FileDiff {
  resource: string;
  target: string;
  diff: string;
}

/** What the speak fingerprint is taken from; a field not yet known is empty, never invented. */
export interface Facts {
  held: HeldEntry[];
  links: Link[];
  /** Every table and chain that refuses traffic, with whose it is; an `unknown` entry for a tool that could not be asked. */
  filters: FilterEntry[];
  /** ufw, firewalld: as found, with the host's convergence state for each; null when none is installed. */
  foundFirewall: FoundFirewall | null;
}

/** One per apply: what was done, found and said, as data. */
export interface Report {
  node: string;
  /** The host's own report sequence. */
  sequence: number;
  trigger: Trigger;
  declaration: Mark | null;
  mode: Mode | null;
  outcome: Outcome;
  /**
   * `subjects`: what a refusal names, whole (the message may cut a long name). `code`, `path`: the errno
   * code of a write that failed and the declared path it was writing (`ENOSPC`: the disk is full).
   */
  error?: { resource?: string; message: string; subjects?: Subject[]; code?: string; path?: string };
  /** Every step, its changes as data and as words (`actions`, for the wire's readers). */
  steps: Array<Readable<StepResult>>;
  said: string[];
  facts: Facts;
  startedAt: string;
  finishedAt: string;
}

/**
 * One readable line a step: `update /etc/x.conf: content (+3 −1 lines), mode 0644→0640`. The step's
 * verb leads; the change that is the verb itself (a take's `take`) is not said twice.
 */
export function formatStep(step: Step): string {
  if (step.changes.length === 0) return `unchanged ${step.target}`;
  const verb = step.verb === 'none' ? 'update' : step.verb;
  const rest = step.changes.map(wordsOf).filter((words) => words !== verb);
  return `${verb} ${step.target}${rest.length ? `: ${rest.join(', ')}` : ''}`;
}

/**
 * The steps to take, one line each, under a line that counts them against the whole plan. Like the
 * report, it leaves out what is already as declared: a no-op of 10,000 files is one line, not 10,001
 * (`--json` still holds every step).
 */
export function formatPlan(plan: Plan): string {
  const total = plan.summary?.total ?? plan.steps.length;
  if (total === 0) return 'plan: nothing declared, nothing to do';
  const changing = plan.summary?.changing() ?? plan.steps.filter((s) => s.changes.length > 0);
  return [
    `plan: ${changing.length} of ${total} step${total === 1 ? '' : 's'} to take`,
    ...changing.map((s) => `  ${formatStep(s)}`),
    ...(plan.diffs ?? []).map((d) => d.diff),
  ].join('\n');
}

export function formatReport(report: Report): string {
  const counts = new Map<string, number>();
  for (const s of report.steps) counts.set(s.status, (counts.get(s.status) ?? 0) + 1);
  const tally = [...counts].map(([status, n]) => `${n} ${status}`).join(', ') || 'no steps';
  const lines = [`${report.outcome} (report ${report.sequence}): ${tally}`];
  for (const s of report.steps) {
    if (s.status === 'unchanged') continue;
    lines.push(`  ${s.status.padEnd(8)} ${formatStep(s)}${s.detail ? ` — ${s.detail}` : ''}`);
  }
  if (report.error) lines.push(`error: ${report.error.resource ? `${report.error.resource}: ` : ''}${report.error.message}`);
  for (const line of report.said) lines.push(`said: ${line}`);
  return lines.join('\n');
}
