import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { STATE_FILE } from '../store/store.js';

export type SavedState = Record<string, unknown> & { records?: object; journal?: { records?: number }; refusals?: Record<string, number>; reportSequence?: number; lastOutcome?: { at: string; reportSequence?: number } };

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
 * The store as saved, read without the lock (it is saved whole, by rename), for status answers,
 * heartbeats and metrics. It is parsed again only when the file changed, not for every request.
 */
export function savedStateReader(stateDir: string): () => SavedState | undefined {
  const file = join(stateDir, STATE_FILE);
  let seen: { key: string; state: SavedState } | undefined;
  return () => {
    try {
      const key = savedHeadKey(stateDir);
      if (key === undefined) return undefined;
      if (seen?.key !== key) seen = { key, state: JSON.parse(readFileSync(file, 'utf8')) as SavedState };
      return seen.state;
    } catch {
      // not saved yet (or being replaced): nothing to say
      return undefined;
    }
  };
}
