import { toPromise } from 'xstate';
import type { Look } from '../../../machines/unit-watcher.js';
import type { UnitState } from '../../machine/services/manager.js';
import { queryUnits, type ServiceApply } from './runtime.js';

export interface VerifyFailure {
  resource: string;
  message: string;
}

/**
 * The second look: one pause shared by every unit the apply started, restarted or reloaded, then one
 * batched read, each unit's watcher deciding. Units the apply did not touch are never paused for.
 */
export async function secondLook(runtime: ServiceApply): Promise<VerifyFailure[]> {
  if (runtime.watched.length === 0) return [];
  const started = runtime.clock.monotonic();
  const lastAction = Math.max(...runtime.watched.map((w) => w.actedAt));
  const waited = runtime.clock.monotonic() - lastAction;
  const pausedMs = Math.max(0, runtime.pauseMs - waited);
  if (pausedMs > 0) await runtime.clock.sleep(pausedMs);

  const states = await queryUnits(runtime, [...new Set(runtime.watched.map((w) => w.unit))]);
  const now = runtime.clock.monotonic();
  for (const w of runtime.watched) {
    const state = states.get(w.unit);
    if (state) w.watcher.send({ type: 'SECOND_LOOK', look: lookAt(state, now - w.actedAt) });
    else w.watcher.send({ type: 'SECOND_LOOK', look: { activeState: 'unknown', subState: 'unknown', result: 'the service manager said nothing of it', invocationId: '', nRestarts: 0, job: false, sinceActionMs: now - w.actedAt } });
  }
  const verdicts = await Promise.all(runtime.watched.map((w) => toPromise(w.watcher)));
  runtime.verified = { units: runtime.watched.map((w) => w.unit), pausedMs: Math.round(pausedMs), tookMs: Math.round(runtime.clock.monotonic() - started) };
  const failures = verdicts.flatMap((v, i) => (v.accepted ? [] : [{ resource: runtime.watched[i]!.resource, message: v.message }]));
  runtime.watched = [];
  return failures;
}

export function lookAt(state: UnitState, sinceActionMs: number): Look {
  return {
    activeState: state.activeState,
    subState: state.subState,
    result: state.result,
    invocationId: state.invocationId,
    nRestarts: state.nRestarts,
    job: state.job !== '',
    sinceActionMs,
  };
}
