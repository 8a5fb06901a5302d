import { readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { isWholeReportLeftover, Outbox } from '../report/outbox.js';
import { recoverIntents } from '../resources/recover.js';
import { isTemporary } from '../system/durable.js';
import { Store } from '../store/store.js';
import type { Logger } from '../system/log.js';

/**
 * Opens the store (under the lock) and reconciles it with the outbox: a report written there whose
 * sequence the store had not yet recorded (a crash between the two writes) moves the store's report
 * sequence on, so that no later report reuses its sequence and nothing is lost. An apply cut short is
 * finished or undone here (its intents), before anything else is read.
 */
export async function openStore(stateDir: string, log: Logger): Promise<Store> {
  const store = Store.open(stateDir, log);
  removeTemporaries(stateDir, log);
  return settleOpened(store, log);
}

/**
 * The temporary files that writes cut short by a crash left in the state directory's folders (the
 * outbox, the whole reports, the archive journals, the kept originals): nothing reads them, and
 * nothing else would ever remove them. The store's own are removed as it opens.
 */
function removeTemporaries(stateDir: string, log: Logger): void {
  const removed: string[] = [];
  for (const entry of readdirSync(stateDir, { withFileTypes: true })) {
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
  return store;
}
