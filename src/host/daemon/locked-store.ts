import type { Store } from '../../core/store/store.js';
import type { StoreState } from '../../core/store/state.js';
import type { Logger } from '../../core/system/log.js';
import { openStore, settleOpened } from '../../engine/apply/open-store.js';
import { LOCK_HOLDERS_FILES, takeLock } from '../env/open-host.js';
import { savedHeadKey, StorePeek, type SavedHead } from '../../core/store/peek.js';

/** How long the daemon waits for a command run by hand to let go of the lock. */
const DAEMON_LOCK_TIMEOUT_MS = 120_000;

/** The store a run left with nothing unsaved, and which save of the head on disk it was. */
interface Left {
  head: string;
  store: Store;
}

/** The store under the lock, held by one run of this daemon until it lets go. */
export interface HeldStore {
  store: Store;
  /** Lets go of the lock, and of this run's turn; `ended`: the run ended as it meant to, so its store may serve the next. */
  release(ended: boolean): void;
}

/** The store as saved, read without the lock: its head, and when asked its whole state. */
export interface Peeked {
  head: SavedHead | undefined;
  state(): Readonly<StoreState> | undefined;
}

/**
 * The daemon's ways to the store. `run` (and `plan`, a dry run in its turn): every apply, refusal and start takes the lock and reads the store
 * afresh when a command run by hand may have saved in between; while the head on disk is still the
 * daemon's own last save, the store that run left is used again (opening a 10,000-record store parses a
 * 2 MB journal, and held the event loop about 100 ms at the start of every apply). Once the host ends,
 * no save may start: the store in use is quiesced, and so is any opened after.
 */
export class LockedStore {
  private quiesced = false;
  private running = false;
  private current: Store | undefined;
  private left: Left | undefined;
  /** Runs and plans one after another in this process (the lock orders them against other processes). */
  private queue: Promise<unknown> = Promise.resolve();
  private readonly saved: StorePeek;

  constructor(private readonly stateDir: string, private readonly log: Logger) {
    this.saved = new StorePeek(stateDir);
  }

  run<T>(what: string, fn: (store: Store) => Promise<T>): Promise<T> {
    return this.hold(what).then((held) => this.within(held, fn));
  }

  /**
   * The store held under the lock, in this process's turn, until the holder releases it (the worker:
   * it runs its work with the store itself, and lets go however the work ended).
   */
  async hold(what: string): Promise<HeldStore> {
    const turn = this.nextTurn();
    await turn.ready;
    return this.locked(what, turn.end);
  }

  /**
   * A plan (a dry run) in its turn: against the store the last run left, without the lock, while the
   * head on disk is that run's save; so a plan takes, writes and removes nothing in the state directory,
   * not even the lock file. When a command run by hand saved since, it opens the store under the lock
   * as a run does.
   */
  async plan<T>(fn: (store: Store) => Promise<T>): Promise<T> {
    const turn = this.nextTurn();
    await turn.ready;
    const left = this.left;
    if (!left || this.quiesced || savedHeadKey(this.stateDir) !== left.head || !left.store.settled()) return this.within(await this.locked('plan', turn.end), fn);
    try {
      return await fn(left.store);
    } finally {
      turn.end();
    }
  }

  /** Runs and plans one after another in this process: a turn is ready once the one before it ended. */
  private nextTurn(): { ready: Promise<unknown>; end: () => void } {
    let end!: () => void;
    const ready = this.queue;
    this.queue = new Promise<void>((resolve) => (end = resolve));
    return { ready, end };
  }

  /** fn with the store held, let go however fn ends. */
  private async within<T>(held: HeldStore, fn: (store: Store) => Promise<T>): Promise<T> {
    let ended = false;
    try {
      const out = await fn(held.store);
      ended = true;
      return out;
    } finally {
      held.release(ended);
    }
  }

  /** In this run's turn: the lock taken and the store opened; on a failure the turn ends with it. */
  private async locked(what: string, endTurn: () => void): Promise<HeldStore> {
    try {
      if (this.quiesced) throw new Error('the host is ending: no apply or save may start');
      const left = this.left;
      this.left = undefined;
      this.running = true;
      const unlock = await takeLock(this.stateDir, this.log, { command: `mesh-host run (${what})`, timeoutMs: DAEMON_LOCK_TIMEOUT_MS });
      const store = await this.open(left).catch((err: unknown) => {
        unlock();
        throw err;
      });
      this.current = store;
      if (this.quiesced) store.quiesce();
      // Let go once: a second release must not remove a lock another process has taken since.
      let held = true;
      return { store, release: (ended) => void (held && ((held = false), this.release(store, ended, unlock, endTurn))) };
    } catch (err) {
      this.running = false;
      endTurn();
      throw err;
    }
  }

  /** A run ended: the store it leaves serves the next while the head on disk is its save; the lock, then the turn, let go. */
  private release(store: Store, ended: boolean, unlock: () => void, endTurn: () => void): void {
    const head = ended ? savedHeadKey(this.stateDir) : undefined;
    if (head !== undefined) this.left = { head, store };
    unlock();
    this.running = false;
    endTurn();
  }

  /**
   * A run of this daemon holds the store (runs go one at a time): a report it puts in the outbox is not
   * yet counted by the store's head, which its save commits after the report is durable. The outbox's
   * watch does not look while it is busy: such a report is told once the outbox says it is committed.
   */
  get busy(): boolean {
    return this.running;
  }

  /**
   * Under the lock: the last run's store again when nothing can have changed it (the head on disk is its
   * save, it holds nothing unsaved, no intents wait), else the store read from disk. Either way what
   * follows an open runs (an intent to recover, a report in the outbox past the recorded sequence).
   */
  private async open(left: Left | undefined): Promise<Store> {
    if (left && !this.quiesced && savedHeadKey(this.stateDir) === left.head && left.store.settled()) return settleOpened(left.store, this.log);
    return openStore(this.stateDir, this.log, LOCK_HOLDERS_FILES);
  }

  /**
   * `peek`: the store as saved, without the lock. Its whole state is the one the daemon's last run left
   * while the head on disk is still that run's save (no command run by hand saved since): what the
   * watchers and an inventory need, without reading 10,000 records again; else it is read from disk.
   */
  peek(): Peeked {
    const left = this.left;
    return {
      head: this.saved.headNow(),
      state: () => (left && savedHeadKey(this.stateDir) === left.head ? left.store.state : this.saved.stateNow()),
    };
  }

  quiesce(): void {
    this.quiesced = true;
    this.left = undefined;
    this.current?.quiesce();
  }

  /** A start (or a resume, or a move) opens it again. */
  reopen(): void {
    this.quiesced = false;
  }
}
