import { afterEach, describe, expect, it } from 'vitest';
import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { Store } from '../../src/core/store/store.js';
import { HostError } from '../../src/core/system/errors.js';
import { scratchFolders } from '../support/tree.js';

const folder = scratchFolders(afterEach);
const stateDir = () => folder('state');

/** A logger whose lines the test can read. */
function capture() {
  const lines: Array<{ level: number; msg: string }> = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { log, lines };
}

const record = (id: string) => ({ id, type: 'file' as const, target: `/etc/${id}`, origin: 'local' as const, created: true, appliedAt: 'now' });
const numbered = (count: number) => Array.from({ length: count }, (_, i) => `r${i}`);

/** A store opened in a fresh state directory and saved once with these records. */
function savedStore(ids: string[]) {
  const dir = stateDir();
  const { log } = capture();
  const store = Store.open(dir, log);
  for (const id of ids) store.record(record(id));
  store.save();
  return { dir, log, store };
}

describe('the store', () => {
  it('saves atomically into a 0700 directory and reads back what it saved', () => {
    const dir = stateDir();
    const { log } = capture();
    const store = Store.open(dir, log);
    store.record(record('a'));
    store.update((s) => (s.reportSequence = 7));
    store.save();
    expect(readdirSync(dir).sort()).toEqual(['records.1.jsonl', 'state.json']);
    const again = Store.open(dir, log);
    expect(again.state.records.a).toEqual(record('a'));
    expect(again.state.reportSequence).toBe(7);
  });

  it('says loudly when a save drops a record nothing forgot or released', () => {
    const dir = stateDir();
    const { log, lines } = capture();
    const store = Store.open(dir, log);
    for (const id of ['a', 'b', 'c']) store.record(record(id));
    store.save();
    store.forget('a');
    store.release('b');
    store.update((s) => delete s.records.c);
    store.save();
    const loud = lines.filter((l) => l.level >= 50);
    expect(loud.map((l) => l.msg)).toEqual(["store: this save drops the record of 'c', which nothing forgot or released"]);
  });

  it('lets no save start once quiesced', () => {
    const store = Store.open(stateDir(), capture().log);
    store.quiesce();
    expect(() => store.save()).toThrow(/quiesced/);
  });

  it('removes leftover temporary saves at open and counts them aloud', () => {
    const dir = stateDir();
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const n of [1, 2, 3]) writeFileSync(join(dir, `state.json.tmp-999-${n}`), 'partial');
    const { log, lines } = capture();
    const store = Store.open(dir, log);
    expect(store.leftoversRemoved).toBe(3);
    expect(readdirSync(dir)).toEqual([]);
    expect(lines.some((l) => l.msg === 'store: removed 3 leftover temporary saves from an earlier run')).toBe(true);
  });

  it('refuses to start on an unreadable store (exit 4) and leaves it untouched', () => {
    const dir = stateDir();
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, 'state.json'), '{"version": 1, "records": {tor');
    try {
      Store.open(dir, capture().log);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(HostError);
      expect((err as HostError).exitCode).toBe(4);
      expect((err as HostError).message).toMatch(/cannot be read.*left untouched/);
      expect((err as HostError).details.join(' ')).toMatch(/restore it from a backup/);
    }
    expect(readFileSync(join(dir, 'state.json'), 'utf8')).toBe('{"version": 1, "records": {tor');
  });

  it('tightens a state directory others could write', () => {
    const dir = stateDir();
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o777);
    Store.open(dir, capture().log);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('writes what changed: one journal line a save, the head renamed whole', () => {
    const { dir, log, store } = savedStore(numbered(1000));
    const journal = join(dir, 'records.1.jsonl');
    const first = statSync(journal).size;
    store.record({ ...record('r7'), appliedAt: 'later' });
    store.forget('r8');
    store.save();
    const grown = statSync(journal).size - first;
    // One record set and one dropped: a line of about one record, not the thousand again.
    expect(grown).toBeLessThan(300);
    expect(readFileSync(journal, 'utf8').split('\n').at(-2)).toBe(JSON.stringify({ set: { r7: { ...record('r7'), appliedAt: 'later' } }, drop: ['r8'] }));
    expect(statSync(join(dir, 'state.json')).size).toBeLessThan(400);
    const again = Store.open(dir, log);
    expect(Object.keys(again.state.records)).toHaveLength(999);
    expect(again.state.records.r7!.appliedAt).toBe('later');
    expect(again.state.records.r8).toBeUndefined();
  });

  it('compacts into a new generation once the lines outgrow half the first, and removes the old', () => {
    const { dir, log, store } = savedStore(numbered(2000));
    let saves = 0;
    while (existsSync(join(dir, 'records.1.jsonl'))) {
      for (let i = 0; i < 200; i++) store.record({ ...record(`r${i}`), appliedAt: `save ${saves}` });
      store.save();
      saves++;
    }
    expect(saves).toBeGreaterThan(1);
    expect(readdirSync(dir).sort()).toEqual(['records.2.jsonl', 'state.json']);
    expect(readFileSync(join(dir, 'records.2.jsonl'), 'utf8').split('\n')).toHaveLength(2);
    const again = Store.open(dir, log);
    expect(Object.keys(again.state.records)).toHaveLength(2000);
    expect(again.state.records.r0!.appliedAt).toBe(`save ${saves - 1}`);
  });

  it('ignores and trims what a save cut before its head wrote past the committed length; removes a generation no head names', () => {
    const { dir, log } = savedStore(['a']);
    const committed = readFileSync(join(dir, 'records.1.jsonl'));
    appendFileSync(join(dir, 'records.1.jsonl'), '{"set":{"b":{"id":"b","type":"file","tar');
    writeFileSync(join(dir, 'records.2.jsonl'), '{"set":{}}\n');
    const again = Store.open(dir, log);
    expect(Object.keys(again.state.records)).toEqual(['a']);
    expect(again.leftoversRemoved).toBe(1);
    expect(readFileSync(join(dir, 'records.1.jsonl'))).toEqual(committed);
    again.record(record('c'));
    again.save();
    expect(Object.keys(Store.open(dir, log).state.records).sort()).toEqual(['a', 'c']);
  });

  it('refuses to start (exit 4) when the journal its head names is missing or shorter, and leaves it all untouched', () => {
    const { dir, log } = savedStore(['a']);
    writeFileSync(join(dir, 'records.1.jsonl'), '');
    expect(() => Store.open(dir, log)).toThrow(/shorter \(0 bytes\) than the \d+ its head committed.*left untouched/);
    rmSync(join(dir, 'records.1.jsonl'));
    expect(() => Store.open(dir, log)).toThrow(HostError);
    expect(readdirSync(dir)).toEqual(['state.json']);
  });

  it('reads a store saved whole (records in its head) and moves it to a journal at its next save', () => {
    const dir = stateDir();
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, 'state.json'), JSON.stringify({ version: 1, records: { a: record('a') }, held: [], reportSequence: 3, refusals: {} }));
    const { log, lines } = capture();
    const store = Store.open(dir, log);
    expect(store.state.records.a).toEqual(record('a'));
    store.record(record('b'));
    store.save();
    expect(readdirSync(dir).sort()).toEqual(['records.1.jsonl', 'state.json']);
    expect(Object.keys(Store.open(dir, log).state.records).sort()).toEqual(['a', 'b']);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  });
});
