import { afterEach, describe, expect, it } from 'vitest';
import { LockedStore } from '../../src/host/daemon/locked-store.js';
import { Store } from '../../src/core/store/store.js';
import type { ResourceRecord } from '../../src/core/store/state.js';
import { silentLogger } from '../../src/core/system/log.js';
import { scratchFolders } from '../support/tree.js';

const folder = scratchFolders(afterEach);

const record = (id: string): ResourceRecord => ({ id, type: 'directory', target: `/srv/${id}`, origin: 'mesh', created: true, appliedAt: '2026-01-01T00:00:00.000Z' });

/** Runs once under the lock and says which store the run was given. */
const storeOf = (locked: LockedStore, change?: (s: Store) => Promise<void>) => locked.run('test', async (s) => (await change?.(s), s));

describe("the daemon's store between its runs", () => {
  it('is used again while the head on disk is its own last save and nothing is unsaved; read afresh otherwise', async () => {
    const dir = folder();
    const log = silentLogger();
    const locked = new LockedStore(dir, log);
    const first = await storeOf(locked, async (s) => {
      s.record(record('a'));
      await s.saveAsync();
    });
    // Its own save is the head: the same store, no journal parsed.
    expect(await storeOf(locked)).toBe(first);
    // Its peek is the store that run left, not the file parsed again.
    expect(locked.peek().state()).toBe(first.state);

    // A command run by hand saved in between: read again, with what the command saved.
    const byHand = Store.open(dir, log);
    byHand.record(record('b'));
    byHand.save();
    // The peek reads what the command saved, without the lock.
    expect(Object.keys(locked.peek().state()!.records).sort()).toEqual(['a', 'b']);
    expect(locked.peek().head?.reportSequence).toBe(0);
    const afterHand = await storeOf(locked);
    expect(afterHand).not.toBe(first);
    expect(Object.keys(afterHand.state.records).sort()).toEqual(['a', 'b']);
    expect(await storeOf(locked)).toBe(afterHand);

    // A run that left a change unsaved: the next one reads the store as saved, without it.
    const unsaved = await storeOf(locked, async (s) => void s.record(record('c')));
    const next = await storeOf(locked);
    expect(next).not.toBe(unsaved);
    expect(next.state.records.c).toBeUndefined();

    // Intents a command run by hand left (cut before its save): read again, and recovered.
    await Store.open(dir, log).intend({ root: dir, entries: [] });
    const recovered = await storeOf(locked);
    expect(recovered).not.toBe(next);
    expect(recovered.pendingIntents).toEqual([]);
    expect(await storeOf(locked)).toBe(recovered);

    // Once the host ends, no run may start; a start afterwards reads the store afresh.
    locked.quiesce();
    await expect(storeOf(locked)).rejects.toThrow(/ending/);
    locked.reopen();
    const restarted = await storeOf(locked);
    expect(restarted).not.toBe(recovered);
    expect(restarted.isQuiesced).toBe(false);
  });
});
