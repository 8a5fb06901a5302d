import { afterEach, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { watchFootprint } from '../../src/host/watch/footprint.js';
import { realPaths } from '../../src/core/declaration/real-paths.js';
import type { Finding } from '../../src/engine/converge/watch-finding.js';
import { silentLogger } from '../../src/core/system/log.js';
import { scratch } from '../support/tree.js';

let cleanups: Array<() => void> = [];
afterEach(() => {
  cleanups.forEach((c) => c());
  cleanups = [];
});

/** A scratch root with owned files and a directory, watched once its first look is taken; every batch of findings is kept. */
async function watched(files = 3) {
  const w = watchedAtOnce(files);
  await w.watcher.looked;
  return w;
}

/** The same, returned as soon as the watcher starts, its first look still being taken (or, put off, not yet begun). */
function watchedAtOnce(files = 3, firstLookAfterMs?: number) {
  const s = scratch('mesh-host-watch-');
  const root = s.dir;
  mkdirSync(join(root, 'etc/app'), { recursive: true });
  for (let i = 0; i < files; i++) writeFileSync(join(root, `etc/app/f${i}.conf`), `value = ${i}\n`, { mode: 0o644 });
  const batches: Finding[][] = [];
  const owned = [{ target: '/etc/app', type: 'directory' as const }, ...Array.from({ length: files }, (_, i) => ({ target: `/etc/app/f${i}.conf`, type: 'file' as const }))];
  const watcher = watchFootprint({ owned, root, onFound: (found) => batches.push(found), log: silentLogger(), ...(firstLookAfterMs ? { firstLookAfterMs } : {}) });
  cleanups.push(() => watcher.close(), s.cleanup);
  const messages = () => batches.flat().map((f) => f.message).sort();
  const until = async (what: string, done: () => boolean, timeoutMs = 10_000) => {
    const started = Date.now();
    while (!done()) {
      if (Date.now() - started > timeoutMs) throw new Error(`${what}: not heard; heard ${JSON.stringify(batches)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return Date.now() - started;
  };
  return { root, batches, messages, until, watcher };
}

describe('the footprint watcher (inotify through fs.watch)', () => {
  it('a file edited, re-moded, removed, and a directory re-moded, each said as drift', async () => {
    const w = await watched();
    writeFileSync(join(w.root, 'etc/app/f0.conf'), 'value = edited by hand\n');
    await w.until('an edit', () => w.messages().includes('drift: /etc/app/f0.conf content changed'));
    chmodSync(join(w.root, 'etc/app/f1.conf'), 0o600);
    await w.until('a chmod', () => w.messages().includes('drift: /etc/app/f1.conf mode 0644→0600'));
    rmSync(join(w.root, 'etc/app/f2.conf'));
    await w.until('a removal', () => w.messages().includes('drift: /etc/app/f2.conf removed'));
    chmodSync(join(w.root, 'etc/app'), 0o700);
    await w.until('a directory chmod', () => w.messages().some((m) => /^drift: \/etc\/app mode 0\d{3}→0700$/.test(m)));
  });

  it('a first look put off: an edit and a removal made before it begins are said, never taken as the baseline', async () => {
    const w = watchedAtOnce(3, 400);
    let lookedYet = false;
    void w.watcher.looked.then(() => (lookedYet = true));
    writeFileSync(join(w.root, 'etc/app/f0.conf'), 'value = edited before the first look\n');
    rmSync(join(w.root, 'etc/app/f2.conf'));
    await new Promise((r) => setTimeout(r, 100));
    expect(lookedYet).toBe(false);
    await w.watcher.looked;
    await w.until('the edit and the removal', () => w.messages().includes('drift: /etc/app/f0.conf changed as the watch began') && w.messages().includes('drift: /etc/app/f2.conf changed as the watch began'));
    expect(w.messages().some((m) => m.includes('f1.conf'))).toBe(false);
  });

  it('closed before its first look is begun: the look is never taken, and looked settles', async () => {
    const w = watchedAtOnce(3, 60_000);
    w.watcher.close();
    await w.watcher.looked;
    writeFileSync(join(w.root, 'etc/app/f0.conf'), 'value = after close\n');
    await new Promise((r) => setTimeout(r, 400));
    expect(w.batches).toEqual([]);
  });

  it('an edit made while the first look is being taken is said, never taken as the baseline', async () => {
    // 2,000 files: their first look takes many turns of the event loop; the edits land before it ends.
    const w = watchedAtOnce(2000);
    const edited = [0, 1000, 1999];
    for (const i of edited) writeFileSync(join(w.root, `etc/app/f${i}.conf`), 'edited as the watch began\n');
    await w.until('the edits', () => edited.every((i) => w.messages().some((m) => m.startsWith(`drift: /etc/app/f${i}.conf `))));
    await w.watcher.looked;
    // Each said once, either as a change the first look missed or as one it may hold.
    const said = w.messages().filter((m) => edited.some((i) => m.startsWith(`drift: /etc/app/f${i}.conf `)));
    expect(said).toHaveLength(3);
    expect(said.every((m) => / (content changed|changed as the watch began)$/.test(m))).toBe(true);
  });

  it('a burst of edits is one batch, each path said once; what the host does not own is not heard; nothing after close', async () => {
    const w = await watched(100);
    writeFileSync(join(w.root, 'etc/app/not-ours.conf'), 'x\n');
    for (let i = 0; i < 100; i++) writeFileSync(join(w.root, `etc/app/f${i}.conf`), `burst ${i}\n`);
    await w.until('the burst', () => w.messages().length >= 100);
    // A marker after the burst: a change of the owned directory, heard in a batch of its own once
    // every batch of the burst has come (the watcher says them in order). Nothing of the burst may follow it.
    chmodSync(join(w.root, 'etc/app'), 0o700);
    await w.until('the marker', () => w.messages().some((m) => m.startsWith('drift: /etc/app mode')));
    const burst = w.batches.slice(0, w.batches.findIndex((b) => b.some((f) => f.message.startsWith('drift: /etc/app mode'))));
    expect(burst.length).toBeLessThanOrEqual(3);
    const said = burst.flat().map((f) => f.message);
    expect(said).toHaveLength(100);
    expect(new Set(said).size).toBe(100);
    expect(said.every((m) => / content changed$/.test(m))).toBe(true);
    w.watcher.close();
    const before = w.batches.length;
    // After close: a second watcher of the same footprint, open, is the marker. Once it has heard the
    // edit, the closed one would have heard it too.
    const marker: Finding[][] = [];
    const open = watchFootprint({ owned: [{ target: '/etc/app/f0.conf', type: 'file' }], root: w.root, onFound: (found) => marker.push(found), log: silentLogger() });
    cleanups.push(() => open.close());
    writeFileSync(join(w.root, 'etc/app/f0.conf'), 'after close\n');
    await w.until('the open watcher hearing the edit', () => marker.length > 0);
    expect(w.batches.length).toBe(before);
  });
});

describe('where a declared path is on disk', () => {
  it('is what path.join gives, for every root and path, normal or not', () => {
    const roots = ['/', '/tmp/r', '/tmp/r/', '//tmp//r', '/tmp/./r/..', 'tmp/r', '.'];
    const targets = ['/a', '/a/b', '/srv/a/0/17', '/a//b', '/a/../b', '/a/', '/', '/a/./b', '/a/b/..', 'rel/x'];
    for (const root of roots) for (const target of targets) expect(realPaths(root)(target), `${root} + ${target}`).toBe(join(root, target));
  });
});
