import type { Store } from '../store/store.js';
import type { StoreState } from '../store/state.js';
import type { Logger } from '../system/log.js';
import { withLockedStore } from '../host/open.js';
import { savedHeadKey } from './saved-state.js';

/** How long the daemon waits for a command run by hand to let go of the lock. */
const DAEMON_LOCK_TIMEOUT_MS = 120_000;

/**
 * The daemon's way to the store: every apply, refusal and start takes the lock and reads the store
 * afresh (a command run by hand may have saved in between). Once the host ends, no save may start:
 * the store in use is quiesced, and so is any opened after.
 */
export class LockedStore {
  private quiesced = false;
  private current: Store | undefined;
  /** The state a run left, and which save of the head it was, taken before the lock was let go. */
  private left: { head: string; state: Readonly<StoreState> } | undefined;

  constructor(private readonly stateDir: string, private readonly log: Logger) {}

  async run<T>(what: string, fn: (store: Store) => Promise<T>): Promise<T> {
    if (this.quiesced) throw new Error('the host is ending: no apply or save may start');
    this.left = undefined;
    return withLockedStore(this.stateDir, this.log, { command: `mesh-host run (${what})`, timeoutMs: DAEMON_LOCK_TIMEOUT_MS }, async (store) => {
      this.current = store;
      if (this.quiesced) store.quiesce();
      const out = await fn(store);
      const head = savedHeadKey(this.stateDir);
      if (head !== undefined) this.left = { head, state: store.state };
      return out;
    });
  }

  /**
   * The state as the daemon's last run left it, while the head on disk is still that run's save (no
   * command run by hand saved since): what the watchers need, without reading 10,000 records again.
   */
  lastSaved(): Readonly<StoreState> | undefined {
    return this.left && savedHeadKey(this.stateDir) === this.left.head ? this.left.state : undefined;
  }

  quiesce(): void {
    this.quiesced = true;
    this.current?.quiesce();
  }

  /** A start (or a resume, or a move) opens it again. */
  reopen(): void {
    this.quiesced = false;
  }
}
