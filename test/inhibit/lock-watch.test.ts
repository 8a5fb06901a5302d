import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { deferredLocks, watchLocks, type Released } from '../../src/host/daemon/lock-watch.js';
import { lockReader } from '../../src/engine/inhibit/inhibit-lock.js';
import type { ResourceRecord } from '../../src/core/store/state.js';
import { systemClock } from '../../src/core/system/clock.js';
import { silentLogger } from '../../src/core/system/log.js';
import { scratch } from '../support/tree.js';

let cleanup: (() => void) | undefined;
afterEach(() => cleanup?.());

/** A scratch root with a lock held by this process (alive as long as the test runs). */
function rootWithLock(): { root: string; lock: string } {
  const s = scratch('mesh-host-lock-');
  cleanup = s.cleanup;
  mkdirSync(join(s.dir, 'run/app'), { recursive: true });
  writeFileSync(join(s.dir, 'run/app/busy.lock'), `${process.pid}\n`);
  return { root: s.dir, lock: '/run/app/busy.lock' };
}

/** Watches until the first release is told; gives it and how long after `act` it came. */
function firstRelease(root: string, lock: string, act: () => void): Promise<{ released: Released; ms: number }> {
  return new Promise((resolve) => {
    let at = 0;
    watchLocks(root, [{ resource: 'app', lock, endsInMs: 600_000 }], lockReader(root), systemClock, silentLogger(), (released) => resolve({ released, ms: performance.now() - at }));
    at = performance.now();
    act();
  });
}

describe('the lock watcher', () => {
  it('tells a lock whose file is removed, once, as gone', async () => {
    const { root, lock } = rootWithLock();
    const { released } = await firstRelease(root, lock, () => rmSync(join(root, lock)));
    expect(released).toEqual({ resource: 'app', lock, why: 'gone' });
  });

  it('tells a lock whose holder died as dead, within a poll', async () => {
    const { root, lock } = rootWithLock();
    const dead = spawnSync('/bin/true').pid;
    const { released, ms } = await firstRelease(root, lock, () => writeFileSync(join(root, lock), `${dead}\n`));
    expect(released.why).toBe('dead');
    expect(ms).toBeLessThan(2000);
  });

  it('tells nothing while the lock is held, poll after poll, and leaves nothing running once stopped', () => {
    const { root, lock } = rootWithLock();
    // The clock passed in, driven by hand: each poll is one timer.
    const timers: Array<() => void> = [];
    const clock = { ...systemClock, after: (_ms: number, fn: () => void) => (timers.push(fn), () => void timers.splice(timers.indexOf(fn) >>> 0, 1)) };
    const told: Released[] = [];
    const stop = watchLocks(root, [{ resource: 'app', lock, endsInMs: 600_000 }], lockReader(root), clock, silentLogger(), (r) => told.push(r));
    for (let poll = 0; poll < 3; poll++) {
      expect(timers).toHaveLength(1);
      timers.shift()!();
    }
    expect(told).toEqual([]);
    stop();
    expect(timers).toEqual([]);
  });
});

describe('what the records keep held off', () => {
  const record = (id: string, checked: string): ResourceRecord => ({
    id, type: 'service', target: `${id}.service`, origin: 'mesh', created: true, appliedAt: checked,
    deferred: { since: '2026-12-03T10:00:00.000Z', lock: `/run/${id}.lock`, maxMs: 60_000, pid: 42, checked },
  });
  const records = { a: record('a', '2026-12-03T10:00:05.000Z'), b: record('b', '2026-12-03T10:00:10.000Z') };

  it('are all watched at a start, each with what is left of its bound', () => {
    expect(deferredLocks(records, Date.parse('2026-12-03T10:00:20.000Z'))).toEqual([
      { resource: 'a', lock: '/run/a.lock', endsInMs: 40_000 },
      { resource: 'b', lock: '/run/b.lock', endsInMs: 40_000 },
    ]);
  });

  it('after an apply, only those that apply found held (an older wait it never reached is not watched again)', () => {
    expect(deferredLocks(records, Date.parse('2026-12-03T10:00:20.000Z'), '2026-12-03T10:00:08.000Z').map((l) => l.resource)).toEqual(['b']);
  });
});
