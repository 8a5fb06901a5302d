import { pauseOrderAt, type Pause, type PauseOrder } from '../../../machines/pause.js';
import type { SavedHead } from '../../core/store/peek.js';
import type { Clock } from '../../core/system/clock.js';
import type { Logger } from '../../core/system/log.js';
import { watchFolder } from './folder-watch.js';

/**
 * Notices `mesh-host pause` and `resume`, run by hand while the daemon serves: they save the pause in the
 * store's head under the lock, and this tells the lifecycle what the head now says (at once, then at every
 * change). It watches the state directory and looks again every second; it decides nothing.
 */
export function watchPause(stateDir: string, head: () => SavedHead | undefined, clock: Clock, log: Logger, tell: (order: PauseOrder | undefined) => void): () => void {
  let last: string | undefined;
  return watchFolder(stateDir, clock, log, 'the state directory', () => {
    const order = pauseOrderAt(head()?.pause as Pause | undefined, clock.now().getTime(), clock.boot);
    const key = JSON.stringify(order?.pause ?? null);
    if (key === last) return;
    last = key;
    tell(order);
  });
}
