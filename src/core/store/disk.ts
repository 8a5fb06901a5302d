import { chmodSync, lstatSync, mkdirSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { cannotStart } from '../system/errors.js';
import { temporaryPrefix } from '../system/durable.js';
import type { Logger } from '../system/log.js';
import { readJournal, type JournalMark } from './records.js';
import { emptyState, recordTable, type StoreState } from './state.js';

/** The head's file in the state directory: renamed whole, it is each save's commit. */
export const STATE_FILE = 'state.json';

/** Creates the state directory 0700, and refuses one another account could write. */
export function ensureStateDir(stateDir: string): void {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const st = lstatSync(stateDir);
  if (!st.isDirectory()) throw cannotStart(`the state directory ${stateDir} is not a directory`);
  if (st.uid !== process.getuid?.()) throw cannotStart(`the state directory ${stateDir} is owned by uid ${st.uid}, not by this host's account`);
  if ((st.mode & 0o022) !== 0) chmodSync(stateDir, 0o700);
}

/** The head and the records its journal commits; a head saved whole (records in it) is read as it stands. */
export function readStore(stateDir: string, text: string): { state: StoreState; mark: JournalMark | undefined; uncommitted?: boolean } {
  const value = JSON.parse(text) as Partial<StoreState> & { journal?: JournalMark };
  if (typeof value !== 'object' || value === null || value.version !== 1) throw new Error('not a version 1 store');
  if (typeof value.reportSequence !== 'number') throw new Error('it has no report sequence');
  const { journal, ...head } = value;
  if (journal !== undefined) {
    if (!Number.isSafeInteger(journal.generation) || !Number.isSafeInteger(journal.length)) throw new Error('its journal mark is not one');
    const mark: JournalMark = { generation: journal.generation, length: journal.length, records: journal.records ?? 0, base: journal.base ?? journal.length };
    const { records, size } = readJournal(stateDir, mark);
    return { state: { ...emptyState(), ...head, records } as StoreState, mark, uncommitted: size > mark.length };
  }
  if (typeof value.records !== 'object' || value.records === null) throw new Error('it has no records');
  return { state: { ...emptyState(), ...head, records: recordTable(value.records) } as StoreState, mark: undefined };
}


/** Temporary saves an earlier run left (a crash mid-rename): removed, and said. */
export function removeLeftovers(stateDir: string, log: Logger): number {
  const prefix = temporaryPrefix(join(stateDir, STATE_FILE));
  let removed = 0;
  for (const name of readdirSync(stateDir)) {
    if (!name.startsWith(prefix)) continue;
    unlinkSync(join(stateDir, name));
    removed++;
  }
  if (removed > 0) log.warn({ removed }, `store: removed ${removed} leftover temporary save${removed === 1 ? '' : 's'} from an earlier run`);
  return removed;
}
