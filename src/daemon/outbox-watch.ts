import { mkdirSync, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { ReportRef } from '../../machines/lifecycle.js';
import { OUTBOX_DIR, type Outbox } from '../report/outbox.js';
import type { Clock } from '../system/clock.js';
import type { Logger } from '../system/log.js';

/** The outbox is looked at again this often besides the watch: a watch can miss an event, a scan cannot. */
export const OUTBOX_RESCAN_MS = 1000;
/** Events of one write (a temporary file, then its rename) are gathered for this long. */
const SETTLE_MS = 20;

/**
 * Notices a report put in the outbox by someone other than the daemon's worker (a `mesh-host reconcile`
 * or `apply` run by hand while it serves) and tells the lifecycle, which sends it in sequence order,
 * once. It watches the folder and scans it again every second; it only says what it found.
 */
export function watchOutbox(stateDir: string, outbox: Outbox, clock: Clock, log: Logger, found: (report: ReportRef) => void): () => void {
  const dir = join(stateDir, OUTBOX_DIR);
  let newest = 0;
  let closed = false;
  let cancelScan: (() => void) | undefined;
  const scan = () => {
    if (closed) return;
    cancelScan?.();
    for (const sequence of outbox.pending()) {
      if (sequence <= newest) continue;
      newest = sequence;
      found({ sequence });
    }
    cancelScan = clock.after(OUTBOX_RESCAN_MS, scan);
  };
  let settle: (() => void) | undefined;
  let watcher: FSWatcher | undefined;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    watcher = watch(dir, () => {
      settle?.();
      settle = clock.after(SETTLE_MS, scan);
    });
    watcher.on('error', (err) => log.warn({ err: err.message }, 'the outbox can no longer be watched; it is still scanned every second'));
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'the outbox cannot be watched; it is scanned every second');
  }
  scan();
  return () => {
    closed = true;
    cancelScan?.();
    settle?.();
    watcher?.close();
  };
}
