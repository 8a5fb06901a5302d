import { lazySealing } from '../report/sealing-key.js';
import { join } from 'node:path';
import type { Received } from '../../core/declaration/load.js';
import { markOf } from '../../core/declaration/order.js';
import type { Mode } from '../../core/declaration/schema.js';
import { changingSteps, planDeclaration, planSteps, touchesMachine } from '../converge/converge.js';
import { applyPlan, type ApplyOutcome } from '../converge/apply-plan.js';
import { RootedFs } from '../converge/rooted-fs.js';
import { lockReader } from '../inhibit/inhibit-lock.js';
import { WriteBatch } from '../converge/write-batch.js';
import { ChangeSet, type ConvergeContext, type StepResult } from '../converge/handler-types.js';
import type { Plan, PlanSummary, Report, Trigger } from '../report/report.js';
import type { Origin } from '../../core/store/state.js';
import type { HostEnv } from './host-env.js';
import { gate, type Refusal } from './gate.js';
import { readOnlyRefusal } from './read-only.js';
import { sayApplyDetail } from './say.js';
import { planDiffs } from './diff.js';
import { shouldSpeak } from '../report/speak.js';
import { keepReport } from './keep-report.js';
import { readable } from '../report/words.js';
import { settleFoundFirewall, type Settled } from '../../machine/filters/settle.js';
import type { RefusalKind, Subject } from '../../core/system/errors.js';
import { markStep } from '../../core/system/trace.js';

export type { HostEnv } from './host-env.js';

export interface ApplyRequest {
  received: Received;
  origin: Origin;
  trigger: Trigger;
  dryRun: boolean;
  /** Only a signed declaration the link delivers may change the recorded mode. */
  mayChangeMode: boolean;
  /** The lifecycle ordered it (the daemon's worker): the gate does not check its order again. */
  ordered?: boolean;
  /** A write that must be durable before the machine is touched (the kept declaration, written while the apply plans). */
  touchAfter?: Promise<void>;
  /** Called with the plan before anything is touched (it is printed first). */
  onPlan?: (plan: Plan) => void;
  /** Said in the report (a repair of the recorded mode, say). */
  said?: string[];
  /** The plan carries a unified diff of each file whose content changes (`--diff`). */
  diff?: boolean;
  /**
   * What a watcher found between applies (`fail2ban.service was failed`): said in the report, which is
   * then always made, even when the reconcile had nothing to repair, so that the mesh hears of it.
   */
  found?: string[];
}

export type ApplyResult =
  | { kind: 'planned'; plan: Plan }
  | { kind: 'applied'; plan: Plan; report: Report }
  /** A reconcile with nothing to say: applied, saved, and no report made (no sequence spent). */
  | { kind: 'silent'; plan: Plan; report: Report }
  | { kind: 'refused'; refusal: RefusalKind; reason: string; details: string[]; subjects?: Subject[]; plan?: Plan; report?: Report };

export { modeProblem } from './gate.js';
export { reportRefusal, reportUnapplied } from './unapplied.js';

const refusedBy = (r: Refusal): ApplyResult => ({ kind: 'refused', refusal: r.kind, reason: r.reason, details: r.details });

/**
 * The one apply path: every way a declaration reaches the machine (a file, genesis, a reconcile,
 * the link) comes through here. It checks order and mode, plans (the check alone), refuses a plan
 * that cannot be applied as the machine stands, applies in order, saves the store even when the
 * apply failed, and makes exactly one report.
 */
export async function applyDeclaration(env: HostEnv, request: ApplyRequest): Promise<ApplyResult> {
  const { declaration, digest } = request.received;
  const { store } = env;
  const startedAt = env.clock.now().toISOString();

  const refusal = gate(declaration, digest, { lastApplied: store.state.lastApplied, recordedMode: store.state.mode, mayChangeMode: request.mayChangeMode, handlers: env.handlers, ...(request.ordered ? { ordered: true } : {}) });
  if (refusal) return refusedBy(refusal);

  const fs = new RootedFs(env.root);
  try {
    const ctx = contextOf(env, request, fs);
    const planned = await planDeclaration(declaration, ctx, env.handlers);
    markStep('planned');
    if (planned.refused !== undefined) return refusedBy({ kind: 'unappliable', reason: `${planned.refused}; nothing was touched`, details: [] });
    const plan = withLazySteps<Plan>({ steps: [], ...(request.diff ? { diffs: await planDiffs(planned, fs) } : {}) }, () => planSteps(planned).map(readable));
    Object.defineProperty(plan, 'summary', { value: { total: planned.removals.length + planned.resources.length, changing: () => changingSteps(planned).map(readable) } satisfies PlanSummary });
    request.onPlan?.(plan);
    if (planned.problems.length > 0) {
      return {
        kind: 'refused',
        refusal: 'unappliable',
        plan,
        reason: `the plan cannot be applied as the machine stands (${planned.problems.length} problem${planned.problems.length === 1 ? '' : 's'}); nothing was touched`,
        details: planned.problems.map((p) => `${p.resource} (${p.target}): ${p.message}`),
        subjects: planned.problems.flatMap((p) => (p.subject ? [{ resource: p.resource, ...p.subject }] : [])),
      };
    }
    if (request.dryRun) return { kind: 'planned', plan };

    const said: string[] = [...(request.found ?? []), ...(request.said ?? [])];
    if (store.state.mode !== declaration.mode) {
      said.push(store.state.mode === undefined ? `mode recorded: ${declaration.mode}` : `mode changed by the mesh: ${store.state.mode} → ${declaration.mode}`);
    }
    // The kept declaration is durable before the machine is touched. A plan that touches nothing does
    // not wait for it here: its write goes to the disk beside the report's and the head's, which wait for it.
    const kept = request.touchAfter && untilKept(request.touchAfter);
    const touches = touchesMachine(planned);
    // Asked only of a plan that touches the machine: a no-op writes the state directory alone, whose
    // write says EROFS itself, and the check's call would wait in the thread pool behind the kept
    // declaration's fsync on every delivery.
    const readOnly = touches ? await readOnlyRefusal([{ what: 'the root', path: env.root }, { what: 'the state directory', path: env.stateDir }]) : undefined;
    if (readOnly) return refusedBy(readOnly);
    if (touches && kept) {
      const unkept = await kept;
      if (unkept) return refusedBy(unkept);
    }
    const outcome = await applyPlan(planned, ctx);
    markStep('applied');
    const report = await reportOf(env, request, outcome, [...said, ...outcome.said], startedAt, touches ? undefined : kept);
    markStep('reported');
    // Whether to speak depends on what changed, never on the unchanged: their steps are not made for it.
    const speaks = shouldSpeak({ trigger: report.trigger, outcome: report.outcome, steps: outcome.changed, facts: report.facts }, store.state.lastFingerprint) || (request.found?.length ?? 0) > 0;
    const unkept = await keepReport(env, report, speaks, touches ? undefined : kept);
    if (unkept) return refusedBy(unkept);
    sayApplyDetail(env.log, report, outcome);
    return { kind: speaks ? 'applied' : 'silent', plan, report };
  } finally {
    fs.close();
  }
}

/** The write the apply waits for before it touches the machine; a refusal when it failed. */
async function untilKept(touchAfter: Promise<void> | undefined): Promise<Refusal | undefined> {
  try {
    await touchAfter;
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    return { kind: 'state', reason: `the declaration could not be kept on disk (${code}); nothing was touched`, details: [] };
  }
}

/** What converging needs for this apply, passed in: nothing of any resource kind. */
function contextOf(env: HostEnv, request: ApplyRequest, fs: RootedFs): ConvergeContext {
  // Users and groups made since the last apply (by hand, or by one of ours) are known to this one.
  env.accounts.refresh();
  return {
    fs,
    writes: new WriteBatch(fs, (intent) => env.store.intend(intent)),
    store: env.store,
    accounts: env.accounts,
    log: env.log,
    origin: request.origin,
    mode: request.received.declaration.mode,
    takenDir: join(env.stateDir, 'taken'),
    now: () => env.clock.now().toISOString(),
    removing: new Set(),
    changed: new ChangeSet(),
    locks: lockReader(env.root),
    sealing: lazySealing(env.stateDir, request.dryRun !== true),
  };
}

/** The apply's one report: what was done, held and said, the found firewall settled after it (its sequence is given when it is kept). */
async function reportOf(env: HostEnv, request: ApplyRequest, outcome: ApplyOutcome, said: string[], startedAt: string, kept?: Promise<Refusal | undefined>): Promise<Report> {
  const { declaration, digest } = request.received;
  const firewall = await retireFoundFirewallAfterApply(env, declaration.mode, !outcome.error, kept);
  const error: Report['error'] = outcome.error ?? (firewall?.failure ? { message: firewall.failure } : undefined);
  const heldSteps = outcome.changed.filter((s) => s.status === 'held');
  const finishedAt = env.clock.now().toISOString();
  const facts = await env.facts?.();
  return withLazySteps<Report>({
    node: env.node,
    sequence: 0,
    trigger: request.trigger,
    declaration: markOf(declaration, digest),
    mode: declaration.mode,
    outcome: error ? 'failed' : 'converged',
    ...(error ? { error } : {}),
    steps: [],
    said: [...said, ...(firewall?.said ?? []), ...saidOf(outcome.changed)],
    facts: {
      held: heldSteps.map((s) => ({ id: s.resource, target: s.target, reason: s.detail ?? 'held' })),
      links: facts?.links ?? [],
      filters: firewall?.filters ?? facts?.filters ?? [],
      foundFirewall: firewall?.foundFirewall ?? facts?.foundFirewall ?? null,
    },
    startedAt,
    finishedAt,
  }, () => outcome.steps().map(readable));
}

/**
 * The post-apply hook: on a converged machine, after a converged apply, the found firewall is retired
 * (and kept so in the store); in every case the found firewall and the filters are read for the report.
 */
async function retireFoundFirewallAfterApply(env: HostEnv, mode: Mode, converged: boolean, kept?: Promise<Refusal | undefined>): Promise<Settled | undefined> {
  if (!env.firewall) return undefined;
  // A retirement touches the machine: the kept declaration is durable first (when the apply did not wait for it).
  const beforeTouch = kept && (async () => {
    const unkept = await kept;
    if (unkept) throw new Error(unkept.reason);
  });
  return settleFoundFirewall({ firewall: env.firewall, store: env.store, clock: env.clock, log: env.log, mode, converged, ...(env.serviceManager ? { serviceManager: env.serviceManager } : {}), ...(beforeTouch ? { beforeTouch } : {}) });
}

/**
 * A list of every step (in place of the placeholder), made when first read and kept from then on as a plain field: a no-op over
 * 10,000 files that nobody reads the steps of (a silent reconcile, the daemon) makes none of them,
 * and a reader (the local report, JSON output) sees an ordinary array.
 */
function withLazySteps<T extends { steps: unknown[] }>(value: T, make: () => T['steps']): T {
  const settle = (on: object, steps: T['steps']) => Object.defineProperty(on, 'steps', { value: steps, writable: true, enumerable: true, configurable: true });
  return Object.defineProperty(value, 'steps', {
    get(this: object) {
      const steps = make();
      settle(this, steps);
      return steps;
    },
    set(this: object, steps: T['steps']) {
      settle(this, steps);
    },
    enumerable: true,
    configurable: true,
  }) as T;
}

function saidOf(steps: StepResult[]): string[] {
  return steps.filter((s) => s.detail && s.status !== 'unchanged' && s.status !== 'skipped' && s.status !== 'failed').map((s) => `${s.target}: ${s.detail}`);
}
