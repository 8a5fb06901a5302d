import { join } from 'node:path';
import type { ReportRef } from '../../machines/lifecycle.js';
import { OUTBOX_DIR, type Outbox } from '../report/outbox.js';
import type { Clock } from '../system/clock.js';
import type { Logger } from '../system/log.js';
import { watchFolder } from './folder-watch.js';

/**
 * Notices a report put in the outbox by someone other than the daemon's worker (a `mesh-host reconcile`
 * or `apply` run by hand while it serves) and tells the lifecycle, which sends it in sequence order,
 * once. It watches the folder and scans it again every second; it only says what it found. It does not
 * look while the daemon's own run holds the store (`busy`): a report that run made is sent once the head
 * that counts it is renamed (the outbox tells of it, or the run's output names it), never before.
 */
export function watchOutbox(stateDir: string, outbox: Outbox, clock: Clock, log: Logger, busy: () => boolean, found: (report: ReportRef) => void): () => void {
  let newest = 0;
  return watchFolder(join(stateDir, OUTBOX_DIR), clock, log, 'the outbox', () => {
    if (busy()) return;
    for (const sequence of outbox.pending()) {
      if (sequence <= newest) continue;
      newest = sequence;
      found({ sequence });
    }
  });
}
