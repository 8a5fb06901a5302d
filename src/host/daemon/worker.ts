import type { Work, WorkerOutput } from '../../../machines/lifecycle.js';
import { pauseOrderAt } from '../../../machines/pause.js';
import type { Clock } from '../../core/system/clock.js';
import { applyDeclaration, reportRefusal, type HostEnv } from '../../engine/apply/apply.js';
import type { HostConfig } from '../../core/config/config.js';
import { markOf } from '../../core/declaration/order.js';
import { reconcileSource, type KeptDeclaration, type ReconcileSource } from '../env/kept-declaration.js';
import type { Store } from '../../core/store/store.js';
import { HostError } from '../../core/system/errors.js';
import { markStep } from '../../core/system/trace.js';
import { deferredLocks } from './lock-watch.js';
import { checkedOf } from './remembered-kept.js';

export interface WorkerDeps {
  config: () => HostConfig;
  kept: KeptDeclaration;
  env: (store: Store) => HostEnv;
  clock: Clock;
}

/**
 * What the machine is told after an apply, whatever its outcome. Not its report: the outbox's watch told
 * of that at its commit (host/daemon/outbox-watch.ts), the one way a report reaches the machine.
 */
function outputOf(store: Store): WorkerOutput {
  const { mode, lastApplied } = store.state;
  return {
    ...(mode ? { mode } : {}),
    ...(lastApplied ? { applied: markOf(lastApplied) } : {}),
  };
}

/**
 * The worker, the one writer: with the store it is given (opened under the lock), it reports the
 * refusals the lifecycle decided, or applies through the one apply path a delivery as the intake checked
 * it (kept when the lifecycle took it), or for a reconcile the kept declaration, read now, when the
 * worker starts. The lifecycle ordered what it applies: the gate does not order it again.
 */
export async function runWork(deps: WorkerDeps, store: Store, work: Work): Promise<WorkerOutput> {
  const env = deps.env(store);
  if (work.kind === 'refusals') {
    for (const { kind, message, delivery } of work.refused) reportRefusal(env, { kind, message, trigger: 'delivery', ...(delivery ? { declaration: markOf(delivery) } : {}) });
    return outputOf(store);
  }
  // The store is the pause's truth, read under the lock: a pause saved as this apply began holds it off.
  const paused = pauseOrderAt(store.state.pause, deps.clock.now().getTime(), deps.clock.boot);
  if (paused) return { ...outputOf(store), paused };
  // A pause that ended by itself goes with this apply's save.
  if (store.state.pause) store.updateHead((s) => delete s.pause);
  const trigger = work.kind === 'delivery' ? 'delivery' : 'reconcile';
  let source: ReconcileSource;
  try {
    // A delivery is applied as the intake checked it (the lifecycle kept those very bytes); a reconcile opens the kept declaration.
    const checked = work.kind === 'delivery' ? checkedOf(work.delivery) : undefined;
    source = checked ? { received: checked, said: [], mayChangeMode: true } : await reconcileSource({ config: deps.config(), store, kept: deps.kept });
  } catch (err) {
    // A kept declaration changed on disk, or carried bytes genesis did not apply: refused, and said.
    if (!(err instanceof HostError) || err.kind === undefined) throw err;
    reportRefusal(env, { kind: err.kind, message: [err.message, ...err.details].join('; '), trigger });
    return outputOf(store);
  }
  markStep('source');
  const { received, mayChangeMode } = source;
  // A delivery is the mesh changing what it says: the apply says a mode it changes; a repair is a reconcile's to say.
  const said = work.kind === 'delivery' ? [] : source.said;
  const found = work.kind === 'reconcile' ? work.found : undefined;
  const began = deps.clock.now().toISOString();
  const result = await applyDeclaration(env, { received, origin: 'mesh', trigger, dryRun: false, mayChangeMode, ordered: true, said, touchAfter: deps.kept.durable(), ...(found?.length ? { found } : {}) });
  if (result.kind === 'refused') {
    const { declaration, digest } = received;
    reportRefusal(env, {
      kind: result.refusal,
      message: [result.reason, ...result.details].join('; '),
      trigger,
      ...(result.subjects?.length ? { subjects: result.subjects } : {}),
      declaration: markOf(declaration, digest),
    });
  }
  // What this apply found held off for a lock: the lifecycle watches those locks (none: it watches nothing).
  // A refused apply touched nothing: what waited before still waits, and is still watched.
  if (result.kind === 'refused') return outputOf(store);
  return { ...outputOf(store), deferred: deferredLocks(store.state.records, deps.clock.now().getTime(), began) };
}
