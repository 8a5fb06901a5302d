import { readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { FULL_REPORTS_DIR, fullReportsAhead, isWholeReportLeftover, Outbox } from '../report/outbox.js';
import { recoverIntents } from '../converge/recover.js';
import { isTemporary, temporaryPrefix } from '../../core/system/durable.js';
import { Store } from '../../core/store/store.js';
import type { Logger } from '../../core/system/log.js';
import { cannotStart, faultOf, HostError, isDiskFull } from '../../core/system/errors.js';

/**
 * Opens the store (under the lock) and reconciles it with the outbox: a report written there whose
 * sequence the store had not yet recorded (a crash between the two writes) moves the store's report
 * sequence on, so that no later report reuses its sequence and nothing is lost. An apply cut short is
 * finished or undone here (its intents), before anything else is read.
 */
export async function openStore(stateDir: string, log: Logger, lockHolders: readonly string[] = []): Promise<Store> {
  try {
    const store = Store.open(stateDir, log);
    removeTemporaries(stateDir, log, lockHolders);
    return await settleOpened(store, log);
  } catch (err) {
    throw stateDirFault(stateDir, err) ?? err;
  }
}

/**
 * The disk under the state directory failed while the store was opened and settled (full, failing,
 * read-only): the host cannot start, and says which directory and what the system said. Nothing was
 * applied; what the open had not yet finished it finishes at the next start.
 */
export function stateDirFault(stateDir: string, err: unknown): HostError | undefined {
  if (err instanceof HostError) return undefined;
  const fault = faultOf(err);
  if (!fault) return undefined;
  return cannotStart(`the state directory ${stateDir} could not be written (${fault.code}${isDiskFull(fault) ? ': the disk is full' : ''}); nothing was applied`, [
    isDiskFull(fault) ? 'make room on its file system, then run again' : 'check the disk (dmesg), then run again',
  ]);
}

/**
 * The temporary files that writes cut short by a crash (or a power cut) left in the state directory's
 * folders (the outbox, the whole reports, the archive journals, the kept originals) and beside the
 * files named in `lockHolders` (files at the top that only the lock's holder writes, such as the kept
 * declaration): nothing reads them, and nothing else would ever remove them. The store's own are
 * removed as it opens. Other top-level files' temporaries are left: a process without the lock (the
 * launcher) may be writing one this moment.
 */
function removeTemporaries(stateDir: string, log: Logger, lockHolders: readonly string[]): void {
  const removed: string[] = [];
  const prefixes = lockHolders.map((name) => temporaryPrefix(name));
  for (const entry of readdirSync(stateDir, { withFileTypes: true })) {
    if (entry.isFile() && isTemporary(entry.name) && prefixes.some((prefix) => entry.name.startsWith(prefix))) {
      unlinkSync(join(stateDir, entry.name));
      removed.push(entry.name);
    }
    if (!entry.isDirectory()) continue;
    for (const name of readdirSync(join(stateDir, entry.name))) {
      if (!isTemporary(name) && !isWholeReportLeftover(name)) continue;
      unlinkSync(join(stateDir, entry.name, name));
      removed.push(`${entry.name}/${name}`);
    }
  }
  if (removed.length > 0) log.warn({ removed }, `store: removed ${removed.length} temporary file${removed.length === 1 ? '' : 's'} an earlier run left in the state directory`);
}

/** What follows every open under the lock, of a store read now or of one a daemon kept from its last run. */
export async function settleOpened(store: Store, log: Logger): Promise<Store> {
  const { stateDir } = store;
  await recoverIntents(store, log);
  const newest = Math.max(0, ...new Outbox(stateDir).pending());
  if (newest > store.state.reportSequence) {
    log.warn({ outbox: newest, store: store.state.reportSequence }, `store: the outbox holds report ${newest}, beyond the recorded sequence ${store.state.reportSequence}; moving the sequence on`);
    store.updateHead((s) => (s.reportSequence = newest));
    store.save();
  }
  removeCopiesAhead(stateDir, store.state.reportSequence, log);
  return store;
}

/**
 * The whole copy of a report is written for the host's own reading, not durably, before the report
 * reaches the outbox: a power cut can keep the copy and lose the report (and the store's count of it).
 * Such a copy is of a report never made; the sequence it holds is made again by the next report.
 */
function removeCopiesAhead(stateDir: string, reportSequence: number, log: Logger): void {
  const removed = fullReportsAhead(stateDir, reportSequence);
  for (const name of removed) unlinkSync(join(stateDir, FULL_REPORTS_DIR, name));
  if (removed.length > 0) log.warn({ removed }, `store: removed ${removed.length} copy of a report never made (beyond the recorded sequence ${reportSequence}): a power cut kept the copy, not the report`);
}
