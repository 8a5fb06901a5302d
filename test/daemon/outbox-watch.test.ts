import { afterEach, describe, expect, it } from 'vitest';
import type { Resource } from '../../src/core/declaration/schema.js';
import type { Clock } from '../../src/core/system/clock.js';
import { silentLogger } from '../../src/core/system/log.js';
import { Outbox } from '../../src/engine/report/outbox.js';
import { watchOutbox } from '../../src/host/daemon/outbox-watch.js';
import { declaration, testHost, type TestHost } from '../support/host.js';

let hosts: TestHost[] = [];
afterEach(() => {
  hosts.forEach((h) => h.cleanup());
  hosts = [];
});

const FILES: Resource[] = [
  { type: 'directory', id: 'app', path: '/srv/app' },
  { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: 'x=1\n' },
];

/** A clock whose timers run only when told: the folder's looks every second are taken by hand. */
function heldClock(): Clock & { fire(): void } {
  let timers: Array<() => void> = [];
  return {
    now: () => new Date(0),
    monotonic: () => 0,
    boot: () => ({ bootId: 'held', ms: 0 }),
    sleep: async () => {},
    after: (_ms, fn) => {
      timers.push(fn);
      return () => void (timers = timers.filter((t) => t !== fn));
    },
    random: () => 0,
    fire() {
      const due = timers;
      timers = [];
      due.forEach((fn) => fn());
    },
  };
}

/** A host with an outbox as the daemon's worker has one. */
function hostWithOutbox(): TestHost & { env: { outbox: Outbox } } {
  const h = testHost();
  hosts.push(h);
  h.env.outbox = new Outbox(h.stateDir);
  return h as TestHost & { env: { outbox: Outbox } };
}

describe("the outbox's watch: the one way a report reaches the lifecycle", () => {
  it('tells what waits at its start, each report the daemon commits at its commit, and one a command leaves at the next look: each once, oldest first', async () => {
    const h = hostWithOutbox();
    // Report 1 made before the watch starts (a run before this one, or a command while the daemon was down).
    expect((await h.apply(declaration(FILES), { trigger: 'delivery' })).kind).toBe('applied');
    const clock = heldClock();
    let busy = false;
    const told: number[] = [];
    const stop = watchOutbox(h.stateDir, h.env.outbox, clock, silentLogger(), () => busy, (event) => told.push(event.report.sequence));
    try {
      expect(told).toEqual([1]);
      // The daemon's own run: the folder is not looked at while it holds the store; its commit tells.
      busy = true;
      const applying = h.apply(declaration(FILES, { sequence: 2 }), { trigger: 'delivery' });
      clock.fire();
      expect((await applying).kind).toBe('applied');
      expect(told).toEqual([1, 2]);
      busy = false;
      clock.fire();
      expect(told).toEqual([1, 2]);
      // A command run by hand leaves report 3 through an outbox of its own: the next look tells of it.
      const byHand = new Outbox(h.stateDir);
      byHand.add({ ...h.env.outbox.wholeReport(2)!, sequence: 3 });
      h.env.store.updateHead((s) => (s.reportSequence = 3));
      expect(told).toEqual([1, 2]);
      clock.fire();
      expect(told).toEqual([1, 2, 3]);
      clock.fire();
      expect(told).toEqual([1, 2, 3]);
    } finally {
      stop();
    }
    // Stopped, it tells of nothing, and the outbox no longer names it as the one to tell.
    expect((await h.apply(declaration(FILES, { sequence: 4 }), { trigger: 'delivery' })).kind).toBe('applied');
    clock.fire();
    expect(told).toEqual([1, 2, 3]);
  });

  it('a report the daemon commits after one a command left unseen is told with it, the older first', async () => {
    const h = hostWithOutbox();
    const clock = heldClock();
    const told: number[] = [];
    const stop = watchOutbox(h.stateDir, h.env.outbox, clock, silentLogger(), () => true, (event) => told.push(event.report.sequence));
    try {
      expect(told).toEqual([]);
      expect((await h.apply(declaration(FILES), { trigger: 'delivery' })).kind).toBe('applied');
      expect(told).toEqual([1]);
      new Outbox(h.stateDir).add({ ...h.env.outbox.wholeReport(1)!, sequence: 2 });
      h.env.store.updateHead((s) => (s.reportSequence = 2));
      expect((await h.apply(declaration(FILES, { sequence: 2 }), { trigger: 'delivery' })).kind).toBe('applied');
      expect(told).toEqual([1, 2, 3]);
    } finally {
      stop();
    }
  });
});
