import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { StoreState } from './state.js';
import { peekState, STATE_FILE } from './store.js';

/** The store's head as saved: what status, heartbeats and metrics read (records are counted in it, not read). */
export type SavedHead = Record<string, unknown> & { records?: object; journal?: { records?: number }; refusals?: Record<string, number>; reportSequence?: number; lastOutcome?: { at: string; reportSequence?: number } };

/**
 * Which save the store's head on disk is, or undefined when there is none: a save renames a new file
 * in, so a new inode, whatever its size and time.
 */
export function savedHeadKey(stateDir: string): string | undefined {
  try {
    const st = statSync(join(stateDir, STATE_FILE));
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return undefined;
  }
}

/**
 * The store as saved, read without the lock (it is saved whole, by rename): its head for status
 * answers, heartbeats and metrics, its records for the watchers and an inventory. Each is read again
 * only when a save replaced the head, not for every request.
 */
export class StorePeek {
  private head: { key: string; value: SavedHead } | undefined;
  private whole: { key: string; value: StoreState | undefined } | undefined;

  constructor(private readonly stateDir: string) {}

  /** The head alone (cheap: the journal of records is not read). */
  headNow(): SavedHead | undefined {
    try {
      const key = savedHeadKey(this.stateDir);
      if (key === undefined) return undefined;
      if (this.head?.key !== key) this.head = { key, value: JSON.parse(readFileSync(join(this.stateDir, STATE_FILE), 'utf8')) as SavedHead };
      return this.head.value;
    } catch {
      // not saved yet (or being replaced): nothing to say
      return undefined;
    }
  }

  /** The whole state, records and all. */
  stateNow(): Readonly<StoreState> | undefined {
    const key = savedHeadKey(this.stateDir);
    if (key === undefined) return undefined;
    if (this.whole?.key !== key) this.whole = { key, value: peekState(this.stateDir) };
    return this.whole.value;
  }
}
