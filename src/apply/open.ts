import { Outbox } from '../report/outbox.js';
import { recoverIntents } from '../resources/recover.js';
import { Store } from '../store/store.js';
import type { Logger } from '../system/log.js';

/**
 * Opens the store (under the lock) and reconciles it with the outbox: a report written there whose
 * sequence the store had not yet recorded (a crash between the two writes) moves the store's report
 * sequence on, so that no later report reuses its sequence and nothing is lost. An apply cut short is
 * finished or undone here (its intents), before anything else is read.
 */
export async function openStore(stateDir: string, log: Logger): Promise<Store> {
  return settleOpened(Store.open(stateDir, log), log);
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
