import { closeSync, constants, fdatasyncSync, ftruncateSync, openSync, readFileSync, readdirSync, unlinkSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncDirectory, fsyncDirectoryAsync } from '../system/durable.js';
import { recordTable, type ResourceRecord } from './state.js';

/**
 * Where the records stand, as the head (state.json) names them: the generation of the journal file and
 * how many of its bytes are committed. Bytes past `length` belong to a save that never reached its head
 * (a crash between the two): they are not part of the store.
 */
export interface JournalMark {
  generation: number;
  length: number;
  /** How many records the store holds: what a status answer needs, without reading the journal. */
  records: number;
  /** The length of the generation's first line (every record at the compaction): when to compact again. */
  base: number;
}

/**
 * One line of the records' journal: records set (whole, replaced) and records dropped, in save order.
 * The first line of a generation sets every record the store held when it was written (the compaction).
 */
export interface JournalLine {
  set?: Record<string, ResourceRecord>;
  drop?: string[];
}

const PREFIX = 'records.';
const SUFFIX = '.jsonl';

export const journalName = (generation: number) => `${PREFIX}${generation}${SUFFIX}`;

/** Generation of a journal file by its name, or undefined when the name is not one. */
function generationOf(name: string): number | undefined {
  if (!name.startsWith(PREFIX) || !name.endsWith(SUFFIX)) return undefined;
  const middle = name.slice(PREFIX.length, -SUFFIX.length);
  return /^[1-9][0-9]*$/.test(middle) ? Number(middle) : undefined;
}

/**
 * The committed records of a journal: its first `length` bytes, replayed in order. Throws when a line in
 * them cannot be read (the store is damaged: the host must not believe it owns nothing).
 */
export function readJournal(stateDir: string, mark: JournalMark): { records: Record<string, ResourceRecord>; size: number } {
  const bytes = readFileSync(join(stateDir, journalName(mark.generation)));
  if (bytes.length < mark.length) throw new Error(`its records journal ${journalName(mark.generation)} is shorter (${bytes.length} bytes) than the ${mark.length} its head committed`);
  const records = recordTable();
  let start = 0;
  while (start < mark.length) {
    const end = bytes.indexOf(10, start);
    if (end < 0 || end >= mark.length) throw new Error(`its records journal ${journalName(mark.generation)} has a line cut at byte ${start}`);
    let line: JournalLine;
    try {
      line = JSON.parse(bytes.toString('utf8', start, end)) as JournalLine;
    } catch {
      throw new Error(`its records journal ${journalName(mark.generation)} has a line that is not JSON at byte ${start}`);
    }
    for (const id of line.drop ?? []) delete records[id];
    if (line.set) for (const id in line.set) records[id] = line.set[id]!;
    start = end + 1;
  }
  return { records, size: bytes.length };
}

/** Removes the journal files of other generations (a compaction cut short, or one finished): under the lock. */
export function removeOtherJournals(stateDir: string, keep: number | undefined): number {
  let removed = 0;
  for (const name of readdirSync(stateDir)) {
    const generation = generationOf(name);
    if (generation === undefined || generation === keep) continue;
    unlinkSync(join(stateDir, name));
    removed++;
  }
  return removed;
}

/** Cuts what a save wrote past the committed length and never committed (under the lock, at open). */
export function trimJournal(stateDir: string, mark: JournalMark): void {
  const fd = openSync(join(stateDir, journalName(mark.generation)), constants.O_WRONLY | constants.O_NOFOLLOW);
  try {
    ftruncateSync(fd, mark.length);
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes a line at the committed end of the journal and waits for the disk; returns the new length.
 * Written at the committed length (never appended blindly), so whatever a cut save left past it is
 * overwritten, and a failed write commits nothing: the head still names the old length.
 */
export function appendLine(stateDir: string, mark: JournalMark, bytes: Uint8Array): number {
  const fd = openSync(join(stateDir, journalName(mark.generation)), constants.O_WRONLY | constants.O_NOFOLLOW);
  try {
    let done = 0;
    while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done, mark.length + done);
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return mark.length + bytes.length;
}

export async function appendLineAsync(stateDir: string, mark: JournalMark, bytes: Uint8Array): Promise<number> {
  const handle = await open(join(stateDir, journalName(mark.generation)), constants.O_WRONLY | constants.O_NOFOLLOW);
  try {
    let done = 0;
    while (done < bytes.length) done += (await handle.write(bytes, done, bytes.length - done, mark.length + done)).bytesWritten;
    await handle.datasync();
  } finally {
    await handle.close();
  }
  return mark.length + bytes.length;
}

/**
 * A new generation holding every record in one line, durable with its name before any head names it.
 * A crash before the head names it leaves a file of a generation nobody names: removed at the next open.
 */
export function startGeneration(stateDir: string, generation: number, bytes: Uint8Array): void {
  const file = join(stateDir, journalName(generation));
  try {
    const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o600);
    try {
      let done = 0;
      while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
      fdatasyncSync(fd);
    } finally {
      closeSync(fd);
    }
    fsyncDirectory(stateDir);
  } catch (err) {
    // A failed save leaves nothing of its own behind (a crash's leftover is removed at the next open).
    dropGeneration(stateDir, generation);
    throw err;
  }
}

export async function startGenerationAsync(stateDir: string, generation: number, bytes: Uint8Array): Promise<void> {
  try {
    const handle = await open(join(stateDir, journalName(generation)), constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o600);
    try {
      await handle.writeFile(bytes);
      await handle.datasync();
    } finally {
      await handle.close();
    }
    await fsyncDirectoryAsync(stateDir);
  } catch (err) {
    dropGeneration(stateDir, generation);
    throw err;
  }
}

/** The generation a head no longer names: gone (a leftover is removed at the next open all the same). */
export function dropGeneration(stateDir: string, generation: number): void {
  try {
    unlinkSync(join(stateDir, journalName(generation)));
  } catch {
    // removed at the next open
  }
}
