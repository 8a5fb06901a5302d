import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Store, STATE_FILE } from '../../src/core/store/store.js';
import type { ResourceRecord } from '../../src/core/store/state.js';
import { silentLogger } from '../../src/core/system/log.js';
import { scratchFolders } from '../support/tree.js';

const folder = scratchFolders(afterEach);

/** Ids JSON.stringify orders in its own way (integer-like first), and text that must be escaped. */
const ids = ['b', '10', 'a"quote', '2', 'naïve', 'back\\slash', ...Array.from({ length: 2000 }, (_, i) => `f${i}`)];
const recordOf = (id: string): ResourceRecord => ({ id, type: 'file', target: `/srv/${encodeURIComponent(id)}`, origin: 'mesh', created: true, appliedAt: '2026-01-01T00:00:00.000Z', seen: { ino: 1, size: 2, mtimeMs: 3.5, ctimeMs: 4.25, digest: 'x' } });

function savedWith(save: (s: Store) => void | Promise<void>) {
  return async () => {
    const dir = folder();
    const store = Store.open(dir, silentLogger());
    for (const id of ids) store.record(recordOf(id));
    await save(store);
    const journal = readdirSync(dir).find((n) => n.startsWith('records.'))!;
    return { dir, journal: readFileSync(join(dir, journal)), head: JSON.parse(readFileSync(join(dir, STATE_FILE), 'utf8')) as { journal: unknown } };
  };
}

describe("the store's save of every record in one line (a new generation)", () => {
  it('writes the same bytes whether made at once or a slice at a time, and reads back the same records', async () => {
    const atOnce = await savedWith((s) => s.save())();
    const inSlices = await savedWith((s) => s.saveAsync())();
    expect(inSlices.journal.equals(atOnce.journal)).toBe(true);
    expect(inSlices.head.journal).toEqual(atOnce.head.journal);
    const reopened = Store.open(inSlices.dir, silentLogger());
    expect(Object.keys(reopened.state.records)).toEqual(Object.keys(Store.open(atOnce.dir, silentLogger()).state.records));
    expect(reopened.state.records['a"quote']).toEqual(recordOf('a"quote'));
  });
});
