import { afterEach, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { Store } from '../../src/store/store.js';
import { HostError } from '../../src/system/errors.js';
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

describe('the store', () => {
  it('saves atomically into a 0700 directory and reads back what it saved', () => {
    const dir = stateDir();
    const { log } = capture();
    const store = Store.open(dir, log);
    store.record(record('a'));
    store.update((s) => (s.reportSequence = 7));
    store.save();
    expect(readdirSync(dir)).toEqual(['state.json']);
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
});
