import { mkdirSync, watch, type FSWatcher } from 'node:fs';
import type { Clock } from '../../core/system/clock.js';
import type { Logger } from '../../core/system/log.js';

/** A folder is looked at again this often besides the watch: a watch can miss an event, a scan cannot. */
export const RESCAN_MS = 1000;
/** Events of one write (a temporary file, then its rename) are gathered for this long. */
const SETTLE_MS = 20;

/**
 * Calls scan now, shortly after anything changes in dir, and every second besides: how the daemon hears
 * of what a command run by hand left in the state directory (a report, a pause). `what` names the folder
 * in a warning when it cannot be watched. Returns the stop.
 */
export function watchFolder(dir: string, clock: Clock, log: Logger, what: string, scan: () => void): () => void {
  let closed = false;
  let cancelScan: (() => void) | undefined;
  const look = () => {
    if (closed) return;
    cancelScan?.();
    scan();
    cancelScan = clock.after(RESCAN_MS, look);
  };
  let settle: (() => void) | undefined;
  let watcher: FSWatcher | undefined;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    watcher = watch(dir, () => {
      settle?.();
      settle = clock.after(SETTLE_MS, look);
    });
    watcher.on('error', (err) => log.warn({ err: err.message }, `${what} can no longer be watched; it is still looked at every second`));
  } catch (err) {
    log.warn({ err: (err as Error).message }, `${what} cannot be watched; it is looked at every second`);
  }
  look();
  return () => {
    closed = true;
    cancelScan?.();
    settle?.();
    watcher?.close();
  };
}
