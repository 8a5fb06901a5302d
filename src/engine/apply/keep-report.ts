import type { Report } from '../report/report.js';
import { fingerprintOf } from '../report/speak.js';
import type { Store } from '../../core/store/store.js';
import type { StoreState } from '../../core/store/state.js';
import { markStep } from '../../core/system/trace.js';
import type { HostEnv } from './host-env.js';
import type { Refusal } from './gate.js';
import { faultOf } from '../../core/system/errors.js';

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException).code ?? (err as Error).message;

/** What an apply changes of the store's head; each is replaced whole, never changed in place. */
const RECORDED = ['mode', 'held', 'lastApplied', 'reportSequence', 'lastFingerprint', 'lastOutcome'] as const;
type Recorded = Pick<StoreState, (typeof RECORDED)[number]>;

/**
 * The store's head after an apply: mode, held, the declaration applied, the outcome, and the report's
 * sequence when it speaks. Returns how to put the head back as it was, for an apply that is not committed.
 */
function recordApply(store: Store, report: Report, speaks: boolean): () => void {
  const before: Partial<Recorded> = {};
  for (const field of RECORDED) Object.assign(before, { [field]: store.state[field] });
  const { error, finishedAt } = report;
  store.updateHead((state) => {
    state.mode = report.mode ?? undefined;
    state.held = report.facts.held;
    if (report.declaration) state.lastApplied = { ...report.declaration, at: finishedAt };
    if (speaks) {
      state.reportSequence += 1;
      report.sequence = state.reportSequence;
      state.lastFingerprint = fingerprintOf(report.facts);
    }
    state.lastOutcome = {
      outcome: report.outcome,
      at: finishedAt,
      reportSequence: state.reportSequence,
      ...(error ? { message: error.resource ? `${error.resource}: ${error.message}` : error.message } : {}),
    };
  });
  return () =>
    store.updateHead((state) => {
      for (const field of RECORDED) {
        if (before[field] === undefined) delete state[field];
        else Object.assign(state, { [field]: before[field] });
      }
    });
}

/**
 * The apply recorded in the store's head (recordApply), and kept with its report. The report reaches
 * the outbox before the store records its sequence: a crash in between leaves a
 * report the next start counts (see openStore), never a sequence without its report. The store is saved
 * even when the apply failed (or the outbox could not be written): what was applied before the failure
 * is on the machine.
 *
 * `kept` is the kept declaration's write when the apply touched nothing and so did not wait for it: it
 * goes to the disk beside the report's and the head's, and neither the report's entry nor the head is
 * renamed before it is durable (a head naming a declaration the disk does not hold would let a restart
 * apply an older one over it). When it could not be kept, nothing of the apply is committed: the head
 * is put back, and its refusal returned.
 */
export async function keepReport(env: HostEnv, report: Report, speaks: boolean, kept?: Promise<Refusal | undefined>): Promise<Refusal | undefined> {
  const uncount = recordApply(env.store, report, speaks);
  const durable = kept?.then((unkept) => {
    if (unkept) throw new Error(unkept.reason);
  });
  // Awaited by the renames below, or by none of them when nothing is written: never left unhandled.
  durable?.catch(() => undefined);
  // The two writes go to the disk together; only the store's commit (its head's rename) waits for the outbox's.
  let entered = false;
  const outboxed = speaks && env.outbox
    ? env.outbox.addAsync(report, durable).then(
      () => void ((entered = true), markStep('outboxed')),
      (err: unknown) => ({ message: `the report could not be kept in the outbox (${codeOf(err)}); the store was left as before this apply, which the next apply reports`, fault: faultOf(err) }),
    )
    : undefined;
  // A head that counts a report the outbox does not hold would leave a hole in the sequence the mesh
  // reads: its rename waits for the report's entry, and is not made when the entry could not be written.
  const reported = outboxed?.then((failure) => {
    if (failure) throw new Error(failure.message);
  });
  // Once the head that counts the report is renamed, the report may leave while the rename is made
  // durable: whoever listens for commits (the daemon's outbox watch) is told at once. Its removal, once
  // acknowledged, waits for the save to end (see Outbox.countedBy).
  const committed = () => void (entered && (markStep('committed'), env.outbox?.onCommitted?.(report.sequence)));
  const saving = env.store.saveAsync(durable ? Promise.all([reported, durable]) : reported, committed);
  if (outboxed) env.outbox?.countedBy(saving);
  const saved = await saving.then(
    () => void markStep('saved'),
    (err: unknown) => ({ message: `the store could not be saved (${codeOf(err)}): the machine holds what was applied, the record on disk is the one before this apply`, fault: faultOf(err) }),
  );
  // The whole report's copy is written beside the commit and the send, but before the apply returns
  // (a one-shot's process ends after it, and `mesh-host status --last-report` reads it).
  await env.outbox?.wholeKept();
  const unkept = await kept;
  // The entry's write ends first (its temporary removed, nothing renamed), so that nothing of it is left.
  if (unkept) return (await outboxed, uncount(), unkept);
  const unreported = await outboxed;
  // The head was not renamed: what this process holds is put back too, so that the next report takes the same sequence.
  if (unreported) uncount();
  const failures = unreported ? [unreported] : saved ? [saved] : [];
  if (failures.length > 0) {
    const message = failures.map((f) => f.message).join('; ');
    env.log.error({ failures: failures.map((f) => f.message) }, message);
    report.outcome = 'failed';
    const fault = failures.find((f) => f.fault)?.fault;
    // The apply's own failure stays the report's error (the first thing that went wrong); this one is said beside it.
    if (report.error) report.said.push(message);
    else report.error = { message, ...(fault ? { code: fault.code, path: env.stateDir } : {}) };
  }
  return undefined;
}
