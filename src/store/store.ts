import { readFileSync, readdirSync, unlinkSync, mkdirSync, lstatSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../system/log.js';
import { cannotStart } from '../system/errors.js';
import { temporaryPrefix, writeDurably, writeDurablyAsync } from './durable.js';
import { IntentJournal } from './intents.js';
import { emptyState, type ResourceRecord, type StoreState } from './state.js';

export const STATE_FILE = 'state.json';

/** Creates the state directory 0700, and refuses one another account could write. */
export function ensureStateDir(stateDir: string): void {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const st = lstatSync(stateDir);
  if (!st.isDirectory()) throw cannotStart(`the state directory ${stateDir} is not a directory`);
  if (st.uid !== process.getuid?.()) throw cannotStart(`the state directory ${stateDir} is owned by uid ${st.uid}, not by this host's account`);
  if ((st.mode & 0o022) !== 0) chmodSync(stateDir, 0o700);
}

/**
 * The store (docs/design.md, "The store"): a working copy that changes as the apply goes, and saves that are atomic,
 * durable, in order, and loud about anything dropped that nobody meant to drop.
 */
export class Store {
  /** The records the last save held (a shallow copy: records are replaced, never changed in place). */
  private saved: Record<string, ResourceRecord>;
  private working: StoreState;
  private marked = new Map<string, 'forget' | 'release'>();
  /** The records as last serialised: a no-op apply saves without serialising 10,000 records again. */
  private recordsJson: string | undefined;
  /** Records changed since the last save (or the open). */
  private recordsDirty = false;
  /** The head as on disk, timestamps aside: a save that would change nothing else writes nothing. */
  private savedHead: string | undefined;
  private quiesced = false;
  private readonly intents: IntentJournal;
  /** Intents a run left unsaved (a crash mid-apply), read at open: to be finished or undone, then cleared. */
  readonly pendingIntents: unknown[];

  private constructor(
    readonly stateDir: string,
    private readonly log: Logger,
    initial: StoreState,
    /** How many leftover temporary saves were removed at open. */
    readonly leftoversRemoved: number,
    onDisk: boolean,
  ) {
    this.saved = { ...initial.records };
    this.working = initial;
    this.intents = new IntentJournal(stateDir);
    this.pendingIntents = this.intents.pending();
    if (onDisk) this.savedHead = steadyHead(initial);
  }

  /** Records durably what an apply is about to make, before it makes it (see IntentJournal). */
  async intend(intent: unknown): Promise<void> {
    if (this.quiesced) throw new Error('the store is quiesced: nothing may be made after the host began to end');
    await this.intents.append(intent);
  }

  /** The intents found at open are dealt with (every path recorded or undone): forget them, durably. */
  clearIntents(): void {
    this.intents.clear(this.pendingIntents.length > 0);
    this.pendingIntents.length = 0;
  }

  /**
   * Opens the store. Call it under the lock: leftover temporary saves are removed here and counted
   * aloud. A store that exists and cannot be read stops the host (exit 4) and is left untouched:
   * believing it owns nothing would leave the whole footprint behind forever.
   */
  static open(stateDir: string, log: Logger): Store {
    ensureStateDir(stateDir);
    const leftovers = removeLeftovers(stateDir, log);
    const file = join(stateDir, STATE_FILE);
    let text: string | undefined;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw cannotStart(`the store ${file} exists but cannot be read (${(err as NodeJS.ErrnoException).code}); it was left untouched`, [
          'restore it from a backup, or fix its permissions; the host will not start believing it owns nothing',
        ]);
      }
    }
    if (text === undefined) return new Store(stateDir, log, emptyState(), leftovers, false);
    let state: StoreState;
    try {
      state = parseState(text);
    } catch (err) {
      throw cannotStart(`the store ${file} cannot be read: ${(err as Error).message}; it was left untouched`, [
        'restore it from a backup (a leftover temporary save may hold a recent copy), or move it aside to start with an empty footprint',
        'the host will not start believing it owns nothing: that would leave everything it applied behind forever',
      ]);
    }
    return new Store(stateDir, log, state, leftovers, true);
  }

  get state(): Readonly<StoreState> {
    return this.working;
  }

  /** Changes the working copy; nothing reaches the disk until save(). */
  update(change: (state: StoreState) => void): void {
    change(this.working);
    this.recordsJson = undefined;
    this.recordsDirty = true;
  }

  /** Changes everything but the records (mode, marks, sequences): the serialised records stay valid. */
  updateHead(change: (state: Omit<StoreState, 'records'>) => void): void {
    change(this.working);
  }

  record(record: ResourceRecord): void {
    this.working.records[record.id] = record;
    this.marked.delete(record.id);
    this.recordsJson = undefined;
    this.recordsDirty = true;
  }

  /** The thing was removed from the machine: dropping its record is meant. */
  forget(id: string): void {
    delete this.working.records[id];
    this.recordsJson = undefined;
    this.recordsDirty = true;
    this.marked.set(id, 'forget');
  }

  /** The host lets go of it on purpose, leaving it on the machine. */
  release(id: string): void {
    delete this.working.records[id];
    this.recordsJson = undefined;
    this.recordsDirty = true;
    this.marked.set(id, 'release');
  }

  /** Once the host ends, no save may start. */
  quiesce(): void {
    this.quiesced = true;
  }

  get isQuiesced(): boolean {
    return this.quiesced;
  }

  /** Atomic and durable; says loudly each record the last save held that this one drops unmarked. */
  save(): void {
    const bytes = this.prepareSave();
    if (bytes === undefined) return;
    writeDurably(join(this.stateDir, STATE_FILE), bytes);
    this.afterSave();
  }

  /** save(), with the disk's waits off the event loop: the apply's save of a large store. */
  async saveAsync(): Promise<void> {
    const bytes = this.prepareSave();
    if (bytes === undefined) return;
    await writeDurablyAsync(join(this.stateDir, STATE_FILE), bytes);
    this.afterSave();
  }

  private pendingSave: { recordsChanged: boolean; head: string } | undefined;

  /** What a save writes, or undefined when it has nothing durable to write; the drop check is said here. */
  private prepareSave(): Buffer | undefined {
    if (this.quiesced) throw new Error('the store is quiesced: no save may start after the host began to end');
    // Records serialised and untouched since the last save (a no-op apply): nothing can have been dropped.
    const recordsChanged = this.recordsJson === undefined;
    if (recordsChanged) {
      for (const id of Object.keys(this.saved)) {
        if (!Object.hasOwn(this.working.records, id) && !this.marked.has(id)) {
          this.log.error({ record: this.saved[id] }, `store: this save drops the record of '${id}', which nothing forgot or released`);
        }
      }
    }
    const { records, ...rest } = this.working;
    const head = steadyHead(rest);
    // Nothing but the time of a no-op changed (a quiet reconcile): nothing durable is written.
    if (!this.recordsDirty && head === this.savedHead && !this.intents.unsettled) {
      this.marked.clear();
      return undefined;
    }
    this.recordsJson ??= JSON.stringify(records);
    this.pendingSave = { recordsChanged, head };
    return Buffer.from(`${JSON.stringify(rest).slice(0, -1)},"records":${this.recordsJson}}\n`);
  }

  /** The save is on disk: what it wrote is now the saved state. */
  private afterSave(): void {
    const { recordsChanged, head } = this.pendingSave!;
    this.pendingSave = undefined;
    if (recordsChanged) this.saved = { ...this.working.records };
    this.marked.clear();
    this.recordsDirty = false;
    this.savedHead = head;
    // The save records what this run's intents named: they are settled. (Intents found at open wait
    // for their recovery, which clears them.)
    if (this.pendingIntents.length === 0) this.intents.clear(false);
  }

}

/** The head as saved, without the times a no-op moves (when it last applied, when its outcome was). */
function steadyHead(state: Omit<StoreState, 'records'> & { records?: unknown }): string {
  const { records: _records, lastApplied, lastOutcome, ...rest } = state;
  return JSON.stringify({ ...rest, lastApplied: lastApplied && { ...lastApplied, at: '' }, lastOutcome: lastOutcome && { ...lastOutcome, at: '' } });
}

/** Reads the store without taking the lock or cleaning anything: for read-only commands (inventory). */
export function peekState(stateDir: string): StoreState | undefined {
  try {
    return parseState(readFileSync(join(stateDir, STATE_FILE), 'utf8'));
  } catch {
    return undefined;
  }
}

function parseState(text: string): StoreState {
  const value = JSON.parse(text) as Partial<StoreState>;
  if (typeof value !== 'object' || value === null || value.version !== 1) throw new Error('not a version 1 store');
  if (typeof value.records !== 'object' || value.records === null) throw new Error('it has no records');
  if (typeof value.reportSequence !== 'number') throw new Error('it has no report sequence');
  return { ...emptyState(), ...value } as StoreState;
}

function removeLeftovers(stateDir: string, log: Logger): number {
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
