import type { JournalLine, JournalMark } from './records.js';
import type { ResourceRecord, StoreState } from './state.js';
import { yielder } from '../system/yielder.js';

/** Lines after a generation's first may grow to half of it, plus this, before a save compacts. */
export const COMPACT_SLACK = 64 << 10;

/** generation: every record in a new journal; append: one line; head: records untouched. */
export type SavePlan = { mark: JournalMark; set: Record<string, ResourceRecord>; drop: string[]; head: string } & (
  | { kind: 'generation'; records: Record<string, ResourceRecord> }
  | { kind: 'append'; line: Buffer }
  | { kind: 'head' }
);

export const lineOf = (line: JournalLine) => Buffer.from(`${JSON.stringify(line)}\n`);

/** A new generation's line, once made: its length is where the generation ends and what it compacts against. */
export function measured(plan: SavePlan & { kind: 'generation' }, line: Buffer): Buffer {
  plan.mark.length = line.length;
  plan.mark.base = line.length;
  return line;
}

/**
 * The same bytes as lineOf({ set: records }) (keys in the order JSON.stringify takes them), made a few
 * hundred records at a time with the event loop let go between slices.
 */
export async function wholeLineInSlices(records: Record<string, ResourceRecord>): Promise<Buffer> {
  const pause = yielder();
  const parts: Buffer[] = [Buffer.from('{"set":{')];
  let slice: string[] = [];
  let comma = '';
  for (const id of Object.keys(records)) {
    const record = records[id];
    if (record === undefined) continue;
    slice.push(`${comma}${JSON.stringify(id)}:${JSON.stringify(record)}`);
    comma = ',';
    if (slice.length < 256) continue;
    parts.push(Buffer.from(slice.join('')));
    slice = [];
    await pause();
  }
  parts.push(Buffer.from(`${slice.join('')}}}\n`));
  return Buffer.concat(parts);
}

/** The head as saved, without the times a no-op moves (when it last applied, when its outcome was). */
export function steadyHead(state: Omit<StoreState, 'records'> & { records?: unknown }): string {
  const { records: _records, lastApplied, lastOutcome, ...rest } = state;
  return JSON.stringify({ ...rest, lastApplied: lastApplied && { ...lastApplied, at: '' }, lastOutcome: lastOutcome && { ...lastOutcome, at: '' } });
}
