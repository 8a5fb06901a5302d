import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { STATE_FILE } from '../store/store.js';

export type SavedState = Record<string, unknown> & { records?: object; journal?: { records?: number }; refusals?: Record<string, number>; reportSequence?: number; lastOutcome?: { at: string; reportSequence?: number } };

/**
 * The store as saved, read without the lock (it is saved whole, by rename), for status answers,
 * heartbeats and metrics. It is parsed again only when the file changed, not for every request.
 */
export function savedStateReader(stateDir: string): () => SavedState | undefined {
  const file = join(stateDir, STATE_FILE);
  let seen: { key: string; state: SavedState } | undefined;
  return () => {
    try {
      const st = statSync(file);
      // A save renames a new file in: a new inode, whatever its size and time.
      const key = `${st.ino}:${st.size}:${st.mtimeMs}`;
      if (seen?.key !== key) seen = { key, state: JSON.parse(readFileSync(file, 'utf8')) as SavedState };
      return seen.state;
    } catch {
      // not saved yet (or being replaced): nothing to say
      return undefined;
    }
  };
}
