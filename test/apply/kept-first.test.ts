import { afterEach, describe, expect, it, vi } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Resource } from '../../src/core/declaration/schema.js';
import { Outbox, OUTBOX_DIR } from '../../src/engine/report/outbox.js';
import { watchOutbox } from '../../src/host/daemon/outbox-watch.js';
import { silentLogger } from '../../src/core/system/log.js';
import { STATE_FILE } from '../../src/core/store/store.js';
import { declaration, testHost, type TestHost } from '../support/host.js';
import { fakeRunner, said } from '../support/fake-runner.js';

let hosts: TestHost[] = [];
afterEach(() => {
  hosts.forEach((h) => h.cleanup());
  hosts = [];
});

const FILES: Resource[] = [
  { type: 'directory', id: 'app', path: '/srv/app' },
  { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: 'x=1\n' },
];

/** A host that applied FILES as sequence 1, with an outbox, as the daemon's worker has one. */
async function appliedOnce(): Promise<TestHost> {
  const h = testHost();
  hosts.push(h);
  h.env.outbox = new Outbox(h.stateDir);
  expect((await h.apply(declaration(FILES), { trigger: 'delivery' })).kind).toBe('applied');
  return h;
}

const headOnDisk = (h: TestHost) => JSON.parse(readFileSync(join(h.stateDir, STATE_FILE), 'utf8')) as { reportSequence: number; lastApplied?: { sequence: number } };
/** A kept declaration's write that failed, as the daemon's kept declaration says it (its rejection is the apply's to handle). */
function keptFailed(): Promise<void> {
  const failed = Promise.reject(Object.assign(new Error('the disk failed'), { code: 'EIO' }));
  failed.catch(() => undefined);
  return failed;
}
const temporaries = (dir: string) => readdirSync(dir).filter((name) => name.includes('.tmp-'));

describe('the kept declaration is durable before the machine is touched, and before the apply is committed', () => {
  it('a plan that touches nothing goes on while the kept declaration is written; its report and the head are renamed only once it is durable', async () => {
    const h = await appliedOnce();
    let durable!: () => void;
    const touchAfter = new Promise<void>((resolve) => (durable = resolve));
    const applying = h.apply(declaration(FILES, { sequence: 2 }), { trigger: 'delivery', touchAfter });
    // The head's temporary written and waiting for its rename: the apply went on without the kept declaration.
    await vi.waitFor(() => expect(temporaries(h.stateDir)).toHaveLength(1), { timeout: 10_000, interval: 5 });
    expect(headOnDisk(h).lastApplied?.sequence).toBe(1);
    expect(h.env.outbox!.pending()).toEqual([1]);
    durable();
    const result = await applying;
    expect(result.kind).toBe('applied');
    expect(headOnDisk(h)).toMatchObject({ reportSequence: 2, lastApplied: { sequence: 2 } });
    expect(h.env.outbox!.pending()).toEqual([1, 2]);
    expect(temporaries(h.stateDir)).toEqual([]);
  });

  it('a plan that touches nothing, whose kept declaration could not be written: refused, nothing committed, the head in memory as before', async () => {
    const h = await appliedOnce();
    const before = JSON.stringify({ ...h.env.store.state, records: undefined });
    const onDisk = readFileSync(join(h.stateDir, STATE_FILE), 'utf8');
    const result = await h.apply(declaration(FILES, { sequence: 2 }), { trigger: 'delivery', touchAfter: keptFailed() });
    expect(result).toMatchObject({ kind: 'refused', refusal: 'state', reason: 'the declaration could not be kept on disk (EIO); nothing was touched' });
    expect(JSON.stringify({ ...h.env.store.state, records: undefined })).toBe(before);
    expect(readFileSync(join(h.stateDir, STATE_FILE), 'utf8')).toBe(onDisk);
    expect(h.env.outbox!.pending()).toEqual([1]);
    expect([...temporaries(h.stateDir), ...temporaries(join(h.stateDir, OUTBOX_DIR))]).toEqual([]);
    h.reopen();
    expect(h.env.store.state).toMatchObject({ reportSequence: 1, lastApplied: { sequence: 1 } });
  });

  it('a plan that changes the machine waits for the kept declaration: when it could not be written, nothing is touched', async () => {
    const h = await appliedOnce();
    const changed: Resource[] = [FILES[0]!, { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: 'x=2\n' }];
    const result = await h.apply(declaration(changed, { sequence: 2 }), { trigger: 'delivery', touchAfter: keptFailed() });
    expect(result).toMatchObject({ kind: 'refused', refusal: 'state' });
    expect(readFileSync(join(h.root, 'srv/app/app.conf'), 'utf8')).toBe('x=1\n');
    expect(headOnDisk(h)).toMatchObject({ reportSequence: 1, lastApplied: { sequence: 1 } });
  });

  it('a found firewall is retired after an apply that touched nothing only once the kept declaration is durable: one that could not be written retires nothing', async () => {
    const h = testHost();
    hosts.push(h);
    const runner = fakeRunner({ ufw: (args) => (args[0] === 'status' ? said('Status: active\n') : said('Firewall stopped and disabled on system startup\n')) });
    h.env.firewall = { runner };
    const result = await h.apply(declaration([]), { trigger: 'delivery', touchAfter: keptFailed() });
    expect(result).toMatchObject({ kind: 'refused', refusal: 'state' });
    expect(runner.calls.filter((c) => c.command === 'ufw' && c.args[0] !== 'status')).toEqual([]);
    h.reopen();
    expect(h.env.store.state.foundFirewall).toBeUndefined();
  });
});

/** A host with an outbox, as the daemon's worker has one, that applied nothing yet. */
function hostWithOutbox(): TestHost & { env: { outbox: Outbox } } {
  const h = testHost();
  hosts.push(h);
  h.env.outbox = new Outbox(h.stateDir);
  return h as TestHost & { env: { outbox: Outbox } };
}

/** The store's saves held open once written (until `release`), as a slow directory fsync would hold them. */
function holdSaves(h: TestHost): { release: () => void; ended: () => boolean } {
  const store = h.env.store;
  const save = store.saveAsync.bind(store);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let ended = false;
  store.saveAsync = async (...args) => {
    await save(...args);
    await gate;
    ended = true;
  };
  return { release, ended: () => ended };
}

describe('a report leaves once its head is renamed; its removal waits for the save that counts it', () => {
  it('the outbox tells of a report only once its entry is on disk and the head on disk counts it', async () => {
    const h = hostWithOutbox();
    const told: Array<{ sequence: number; pending: number[]; head: number }> = [];
    h.env.outbox.whenCommitted((sequence) => told.push({ sequence, pending: h.env.outbox.pending(), head: headOnDisk(h).reportSequence }));
    expect((await h.apply(declaration(FILES), { trigger: 'delivery' })).kind).toBe('applied');
    expect((await h.apply(declaration(FILES, { sequence: 2 }), { trigger: 'delivery' })).kind).toBe('applied');
    expect(told).toEqual([
      { sequence: 1, pending: [1], head: 1 },
      { sequence: 2, pending: [1, 2], head: 2 },
    ]);
  });

  it('the daemon is told of a report made by hand before this apply with it, oldest first, not of the newer one alone', async () => {
    const h = hostWithOutbox();
    // Report 1 as a command run by hand leaves it: in the outbox and counted, told to no daemon.
    expect((await h.apply(declaration(FILES), { trigger: 'delivery' })).kind).toBe('applied');
    const told: number[] = [];
    // The daemon's own run holds the store throughout: the folder is not looked at, only the commit tells.
    const stop = watchOutbox(h.stateDir, h.env.outbox, h.env.clock, silentLogger(), () => true, (event) => told.push(event.report.sequence));
    try {
      expect(told).toEqual([]);
      expect((await h.apply(declaration(FILES, { sequence: 2 }), { trigger: 'delivery' })).kind).toBe('applied');
      expect(told).toEqual([1, 2]);
    } finally {
      stop();
    }
  });

  it("an acknowledged report told before its save ended is removed only once that save ended", async () => {
    const h = hostWithOutbox();
    const held = holdSaves(h);
    let removal: Promise<'removed'> | undefined;
    h.env.outbox.whenCommitted((sequence) => (removal = h.env.outbox.remove(sequence).then(() => 'removed' as const)));
    const applying = h.apply(declaration(FILES), { trigger: 'delivery' });
    while (removal === undefined) await new Promise((r) => setImmediate(r));
    // An unlink takes microseconds: a removal that did not wait would be done long before this.
    const early = await Promise.race([removal, new Promise<'held'>((r) => setTimeout(() => r('held'), 200))]);
    expect(early).toBe('held');
    expect(held.ended()).toBe(false);
    expect(h.env.outbox.pending()).toEqual([1]);
    held.release();
    expect(await removal).toBe('removed');
    expect(held.ended()).toBe(true);
    expect(h.env.outbox.pending()).toEqual([]);
    expect((await applying).kind).toBe('applied');
  });

  it('a report whose entry could not be written is never told, and the head that would count it is not committed: the next report takes its number, leaving no hole', async () => {
    const h = hostWithOutbox();
    const told: number[] = [];
    h.env.outbox.whenCommitted((sequence) => told.push(sequence));
    const addAsync = h.env.outbox.addAsync.bind(h.env.outbox);
    h.env.outbox.addAsync = () => Promise.reject(Object.assign(new Error('no space'), { code: 'ENOSPC' }));
    const failed = await h.apply(declaration(FILES), { trigger: 'delivery' });
    if (failed.kind !== 'applied') throw new Error(`an apply, not ${failed.kind}`);
    expect(failed.report.outcome).toBe('failed');
    expect(failed.report.error?.message).toMatch(/could not be kept in the outbox \(ENOSPC\)/);
    expect(existsSync(join(h.stateDir, STATE_FILE))).toBe(false);
    expect(told).toEqual([]);
    // Room again: the next apply's report is number 1, told once its head is committed.
    h.env.outbox.addAsync = addAsync;
    await h.apply(declaration(FILES), { trigger: 'delivery' });
    expect(headOnDisk(h).reportSequence).toBe(1);
    expect(told).toEqual([1]);
  });
});
