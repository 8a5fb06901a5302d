import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../system/log.js';
import { cannotStart } from '../system/errors.js';
import { writeDurably, writeDurablyAsync } from '../system/durable.js';
import { IntentJournal } from './intents.js';
import { appendLine, appendLineAsync, dropGeneration, removeOtherJournals, startGeneration, startGenerationAsync, trimJournal, type JournalMark } from './records.js';
import { emptyState, recordTable, type ResourceRecord, type StoreState } from './state.js';
import { ensureStateDir, readStore, removeLeftovers, STATE_FILE } from './disk.js';
import { COMPACT_SLACK, lineOf, measured, steadyHead, wholeLineInSlices, type SavePlan } from './save-plan.js';

export { ensureStateDir, STATE_FILE } from './disk.js';

/**
 * The store (docs/design.md, "The store"): a working copy that changes as the apply goes, and saves that are atomic,
 * durable, in order, and loud about anything dropped that nobody meant to drop.
 *
 * On disk, a save costs what changed, not the footprint: the records live in an append-only journal
 * (records.<generation>.jsonl, one line a save: the records it set and dropped), and the head (state.json:
 * sequences, marks, mode, and how many bytes of which journal are committed) is written whole, small, and
 * renamed into place. The rename is the commit: a save appends its line and waits for the disk, then renames
 * the head that names the new length; a crash before the rename leaves the old head, which ignores the bytes
 * past its length. When the lines after a generation's first outgrow half of it, the save starts a new
 * generation whose one line holds every record (the compaction), and the head names it; the old file goes.
 * Chosen over rewriting the whole store (3.3 MB at 10,000 files, fsynced, at every changing save) and over
 * SQLite (a native dependency and its own journal for what is a map of records saved in order).
 */
export class Store {
  /** The records the last save held (a shallow copy: records are replaced, never changed in place). */
  private saved: Record<string, ResourceRecord>;
  private working: StoreState;
  private marked = new Map<string, 'forget' | 'release'>();
  /** Records set or dropped since the last save; `all` when a change could have touched any (update()). */
  private dirty = new Set<string>();
  private allDirty = false;
  /** Where the committed records end; undefined while no journal exists (a new store, or one saved whole before). */
  private mark: JournalMark | undefined;
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
    mark: JournalMark | undefined,
  ) {
    this.saved = recordTable(initial.records);
    this.working = initial;
    this.mark = mark;
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
   * Opens the store. Call it under the lock: leftover temporary saves and journals no head names are
   * removed here and counted aloud. A store that exists and cannot be read stops the host (exit 4) and
   * is left untouched: believing it owns nothing would leave the whole footprint behind forever.
   */
  static open(stateDir: string, log: Logger): Store {
    ensureStateDir(stateDir);
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
    let loaded: ReturnType<typeof readStore> | undefined;
    if (text !== undefined) {
      try {
        loaded = readStore(stateDir, text);
      } catch (err) {
        throw cannotStart(`the store ${file} cannot be read: ${(err as Error).message}; it was left untouched`, [
          'restore it from a backup (a leftover temporary save may hold a recent copy), or move it aside to start with an empty footprint',
          'the host will not start believing it owns nothing: that would leave everything it applied behind forever',
        ]);
      }
    }
    // Only once the store is known readable: nothing is cleaned from a store the host refuses.
    const leftovers = removeLeftovers(stateDir, log) + removeOtherJournals(stateDir, loaded?.mark?.generation);
    if (loaded?.mark && loaded.uncommitted) trimJournal(stateDir, loaded.mark);
    if (!loaded) return new Store(stateDir, log, emptyState(), leftovers, false, undefined);
    return new Store(stateDir, log, loaded.state, leftovers, true, loaded.mark);
  }

  get state(): Readonly<StoreState> {
    return this.working;
  }

  /** Changes the working copy; nothing reaches the disk until save(). Any record may have changed: the next save compares them all. */
  update(change: (state: StoreState) => void): void {
    change(this.working);
    this.allDirty = true;
  }

  /** Changes everything but the records (mode, marks, sequences). */
  updateHead(change: (state: Omit<StoreState, 'records'>) => void): void {
    change(this.working);
  }

  record(record: ResourceRecord): void {
    this.working.records[record.id] = record;
    this.marked.delete(record.id);
    this.dirty.add(record.id);
  }

  /** The thing was removed from the machine: dropping its record is meant. */
  forget(id: string): void {
    delete this.working.records[id];
    this.dirty.add(id);
    this.marked.set(id, 'forget');
  }

  /** The host lets go of it on purpose, leaving it on the machine. */
  release(id: string): void {
    delete this.working.records[id];
    this.dirty.add(id);
    this.marked.set(id, 'release');
  }

  /** Work that may run only once the next save is on disk (removing a kept copy the store still names until then). */
  onSaved(then: () => void): void {
    this.whenSaved.push(then);
  }

  private whenSaved: Array<() => void> = [];

  /** Once the host ends, no save may start. */
  quiesce(): void {
    this.quiesced = true;
  }

  get isQuiesced(): boolean {
    return this.quiesced;
  }

  /**
   * Nothing in memory differs from the last save (records, marks, the head but its times) and no intents
   * wait, in this process or on disk: a daemon may use this store for its next run instead of parsing
   * 10,000 records again, while the head on disk is still that save (which the daemon checks).
   */
  settled(): boolean {
    const clean = !this.quiesced && !this.allDirty && this.dirty.size === 0 && this.marked.size === 0 && this.whenSaved.length === 0;
    if (!clean || this.pendingIntents.length > 0 || this.intents.unsettled || this.savedHead === undefined) return false;
    return steadyHead(this.working) === this.savedHead && this.intents.pending().length === 0;
  }

  /** Atomic and durable; says loudly each record the last save held that this one drops unmarked. */
  save(): void {
    const plan = this.prepareSave();
    if (plan === undefined) return;
    if (plan.kind === 'generation') startGeneration(this.stateDir, plan.mark.generation, measured(plan, lineOf({ set: plan.records })));
    else if (plan.kind === 'append') plan.mark.length = appendLine(this.stateDir, this.mark!, plan.line);
    writeDurably(join(this.stateDir, STATE_FILE), this.headBytes(plan.mark));
    this.afterSave(plan);
    if (this.pendingIntents.length === 0) this.intents.clear(false);
    this.runWhenSaved();
  }

  /**
   * save(), with the disk's waits off the event loop: the apply's save of a large store. `commitAfter`
   * is a write that must be durable before the head is (the report the head counts, in the outbox):
   * the journal's line and the head's temporary are written and fsynced beside it, and the head's
   * rename, the commit, waits for it. If it rejects, nothing is committed and the save rejects: the
   * head on disk is the one before. `committed` is told once the head is renamed, before the rename is
   * durable (its directory's fsync, which this then waits for).
   */
  async saveAsync(commitAfter?: Promise<unknown>, committed?: () => void): Promise<void> {
    // Not awaited when there is nothing to write: its rejection is then nobody's.
    commitAfter?.catch(() => undefined);
    const plan = this.prepareSave();
    if (plan === undefined) return;
    // Every record in one line is 10,000 records stringified (held a daemon's loop 150-700 ms): made in slices.
    if (plan.kind === 'generation') await startGenerationAsync(this.stateDir, plan.mark.generation, measured(plan, await wholeLineInSlices(plan.records)));
    else if (plan.kind === 'append') plan.mark.length = await appendLineAsync(this.stateDir, this.mark!, plan.line);
    await writeDurablyAsync(join(this.stateDir, STATE_FILE), this.headBytes(plan.mark), 0o600, commitAfter, committed);
    this.afterSave(plan);
    if (this.pendingIntents.length === 0) await this.intents.clearAsync(false);
    this.runWhenSaved();
  }

  /**
   * What a save writes, or undefined when it has nothing durable to write; the drop check is said here.
   * Its cost is the records that changed: only those are compared, serialised and written (a
   * compaction, once in a while, writes them all).
   */
  private prepareSave(): SavePlan | undefined {
    if (this.quiesced) throw new Error('the store is quiesced: no save may start after the host began to end');
    const records = this.working.records;
    const changed = this.allDirty ? new Set([...Object.keys(this.saved), ...Object.keys(records)]) : this.dirty;
    const set: Record<string, ResourceRecord> = {};
    const drop: string[] = [];
    for (const id of changed) {
      const now = records[id];
      const before = this.saved[id];
      if (now === before) continue;
      if (now !== undefined) set[id] = now;
      else if (before !== undefined) {
        drop.push(id);
        if (!this.marked.has(id)) this.log.error({ record: before }, `store: this save drops the record of '${id}', which nothing forgot or released`);
      }
    }
    const { records: _records, ...rest } = this.working;
    const head = steadyHead(rest);
    const recordsChanged = drop.length > 0 || Object.keys(set).length > 0;
    // Nothing but the time of a no-op changed (a quiet reconcile): nothing durable is written.
    if (!recordsChanged && head === this.savedHead && !this.intents.unsettled) {
      this.settleMarks();
      this.runWhenSaved();
      return undefined;
    }
    const count = Object.keys(records).length;
    if (!recordsChanged && this.mark) return { kind: 'head', mark: { ...this.mark, records: count }, set, drop, head };
    const line = recordsChanged ? lineOf({ ...(Object.keys(set).length > 0 ? { set } : {}), ...(drop.length > 0 ? { drop } : {}) }) : undefined;
    // The lines after the generation's first outgrew half of it (or no journal yet): every record in a new generation.
    if (this.mark === undefined || line === undefined || this.mark.length + line.length > this.mark.base * 1.5 + COMPACT_SLACK) {
      return { kind: 'generation', records, mark: { generation: (this.mark?.generation ?? 0) + 1, length: 0, records: count, base: 0 }, set, drop, head };
    }
    return { kind: 'append', line, mark: { ...this.mark, records: count }, set, drop, head };
  }

  private headBytes(mark: JournalMark): Buffer {
    const { records: _records, ...rest } = this.working;
    return Buffer.from(`${JSON.stringify({ ...rest, journal: mark })}\n`);
  }

  /**
   * The save is on disk: what it wrote is now the saved state. The caller then empties the intents
   * (the save records what this run's intents named; intents found at open wait for their recovery,
   * which clears them) and runs the work that waited for the save.
   */
  private afterSave(plan: SavePlan): void {
    for (const id in plan.set) this.saved[id] = plan.set[id]!;
    for (const id of plan.drop) delete this.saved[id];
    const previous = this.mark;
    this.mark = plan.mark;
    if (plan.kind === 'generation' && previous) dropGeneration(this.stateDir, previous.generation);
    this.settleMarks();
    this.savedHead = plan.head;
  }

  private runWhenSaved(): void {
    const waiting = this.whenSaved;
    this.whenSaved = [];
    for (const then of waiting) {
      try {
        then();
      } catch (err) {
        this.log.warn({ err }, 'store: work after a save failed');
      }
    }
  }

  private settleMarks(): void {
    this.marked.clear();
    this.dirty.clear();
    this.allDirty = false;
  }
}

/**
 * Reads the store without taking the lock or cleaning anything: for read-only commands and the daemon's
 * answers. The head is renamed whole and names how much of which journal is committed; a compaction may
 * remove the journal it named between the two reads, so the head is read again then.
 */
export function peekState(stateDir: string): StoreState | undefined {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return readStore(stateDir, readFileSync(join(stateDir, STATE_FILE), 'utf8')).state;
    } catch {
      // not saved yet, or compacted under us: read again
    }
  }
  return undefined;
}
