import type { Pending, ReportRef, WorkerOutput } from '../../machines/lifecycle.js';
import { applyDeclaration, reportRefusal, type HostEnv } from '../apply/apply.js';
import type { HostConfig } from '../config/config.js';
import type { Received } from '../declaration/load.js';
import { markOf } from '../declaration/order.js';
import { reconcileSource, type KeptDeclaration } from '../host/kept.js';
import type { Outbox } from '../report/outbox.js';
import type { Store } from '../store/store.js';
import { HostError } from '../system/errors.js';
import type { CarriedDelivery } from './intake.js';

export interface WorkerDeps {
  config: () => HostConfig;
  kept: KeptDeclaration;
  outbox: Outbox;
  env: (store: Store) => HostEnv;
}

/** Every report waiting in the outbox, read under the lock: a command's report made before it is among them. */
export function waitingReports(outbox: Outbox): ReportRef[] {
  return outbox.pending().map((sequence) => ({ sequence }));
}

/** What the machine is told after an apply, whatever its outcome. */
function outputOf(store: Store, outbox: Outbox): WorkerOutput {
  const { mode, lastApplied } = store.state;
  return {
    reports: waitingReports(outbox),
    ...(mode ? { mode } : {}),
    ...(lastApplied ? { applied: markOf(lastApplied) } : {}),
  };
}

/**
 * The apply worker: one pending declaration, through the one apply path, with the store it is given
 * (opened under the lock). A delivery applies the bytes the machine carried; a reconcile reads the kept
 * declaration now, when the worker starts, never a copy taken earlier. A refusal is reported.
 */
export async function applyPending(deps: WorkerDeps, store: Store, pending: Pending): Promise<WorkerOutput> {
  const env = deps.env(store);
  const trigger = pending.kind === 'delivery' ? 'delivery' : 'reconcile';
  let received: Received;
  let said: string[] = [];
  let mayChangeMode = true;
  if (pending.kind === 'delivery') received = (pending.delivery as CarriedDelivery).payload;
  else {
    try {
      ({ received, said, mayChangeMode } = await reconcileSource({ config: deps.config(), store, kept: deps.kept }));
    } catch (err) {
      // A kept declaration changed on disk, or carried bytes genesis did not apply: refused, and said.
      if (!(err instanceof HostError) || err.kind === undefined) throw err;
      reportRefusal(env, { kind: err.kind, message: [err.message, ...err.details].join('; '), trigger });
      return outputOf(store, deps.outbox);
    }
  }
  const found = pending.kind === 'reconcile' ? pending.found : undefined;
  const result = await applyDeclaration(env, { received, origin: 'mesh', trigger, dryRun: false, mayChangeMode, said, ...(found?.length ? { found } : {}) });
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
  return outputOf(store, deps.outbox);
}
