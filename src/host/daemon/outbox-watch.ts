import { join } from 'node:path';
import type { ReportRef } from '../../../machines/lifecycle.js';
import { OUTBOX_DIR, type Outbox } from '../../engine/report/outbox.js';
import type { Clock } from '../../core/system/clock.js';
import type { Logger } from '../../core/system/log.js';
import { watchFolder } from './folder-watch.js';

/** What the watch tells the lifecycle: its actor's sendBack takes it as it is. */
export type ReportReady = { type: 'REPORT_READY'; report: ReportRef };

/**
 * The one way "a report is ready" reaches the lifecycle. Whatever made the report, the outbox is asked
 * what waits, and each report not told yet is told once, oldest first:
 * - at the start of serving: what a run before this one (or genesis) left;
 * - when the daemon's own worker commits one (its apply tells the watch once the entry is durable and the head
 *   that counts it renamed, before the worker lets go of the lock): it leaves while the rename is made
 *   durable;
 * - when a command run by hand (`mesh-host reconcile`, `apply`) leaves one: the folder is watched, and
 *   looked at again every second. Not while the daemon's own run holds the store (`busy`): a report that
 *   run wrote is told at its commit, never before.
 * A report the daemon commits after one made by hand is told with it, the older first. It decides
 * nothing: which report leaves, and when, is the lifecycle's.
 */
export function watchOutbox(stateDir: string, outbox: Outbox, clock: Clock, log: Logger, busy: () => boolean, ready: (event: ReportReady) => void): () => void {
  /** Every report in the outbox up to this one was told. */
  let newest = 0;
  const tell = (committed?: number) => {
    // The daemon's own report, next after the newest told: no report can wait before it untold (its
    // sequence is the one after them all), so the outbox is not listed.
    if (committed !== undefined && committed === newest + 1) return void ((newest = committed), ready({ type: 'REPORT_READY', report: { sequence: committed } }));
    for (const sequence of outbox.pending()) {
      if (sequence <= newest) continue;
      newest = sequence;
      ready({ type: 'REPORT_READY', report: { sequence } });
    }
  };
  const stopCommitted = outbox.whenCommitted(tell);
  const stopWatch = watchFolder(join(stateDir, OUTBOX_DIR), clock, log, 'the outbox', () => {
    if (!busy()) tell();
  });
  return () => {
    stopCommitted();
    stopWatch();
  };
}
