import { afterEach, describe, expect, it } from 'vitest';
import type { Resource } from '../../src/core/declaration/schema.js';
import { declaration, reportOf, testHost, type TestHost } from '../support/host.js';
import { FakeSystemd, fakeClock } from '../support/fake-systemd.js';
import type { UnitState } from '../../src/machine/services/manager.js';

let host: TestHost;
afterEach(() => host?.cleanup());

function withFake(pauseMs = 1500) {
  const clock = fakeClock();
  const systemd = new FakeSystemd(clock);
  host = testHost({ kinds: { clock, verifyPauseMs: pauseMs, serviceManager: async () => ({ manager: systemd, reason: 'fake' }) } });
  host.env.clock = clock;
  return { clock, systemd };
}

const svc = (id: string, unit: string, extra: object = {}): Resource => ({ type: 'service', id, unit, state: 'running', ...extra });
const file = (id: string, path: string, content: string): Resource => ({ type: 'file', id, path, content });

describe('a service is still running a moment later (the second look)', () => {
  it('a unit running at the first look and dead at the second fails the apply, naming the unit and its state', async () => {
    const { systemd } = withFake();
    systemd.define('jail.service', { kind: 'dies', afterMs: 220 });
    const report = reportOf(await host.apply(declaration([svc('f2b', 'jail.service')])));
    expect(report.outcome).toBe('failed');
    expect(report.error?.resource).toBe('f2b');
    expect(report.error?.message).toMatch(/^jail\.service was running at the first look and is not at the second \(ActiveState=failed, SubState=failed, Result=exit-code, seen 1500 ms after the start\)$/);
    expect(report.steps[0]!.status).toBe('failed');
  });

  it('an apply tells what it last saw of each unit: the restarted one at its second look, the one left alone at the plan\'s read, the one that died as it died', async () => {
    const clock = fakeClock();
    const systemd = new FakeSystemd(clock);
    systemd.define('kept.service', { kind: 'stays' }, { running: true });
    systemd.define('restarted.service', { kind: 'stays' }, { running: true });
    systemd.define('dies.service', { kind: 'dies', afterMs: 220 });
    const told: Array<ReadonlyMap<string, UnitState>> = [];
    host = testHost({ kinds: { clock, verifyPauseMs: 1500, serviceManager: async () => ({ manager: systemd, reason: 'fake' }), unitsLeft: (left) => told.push(left) } });
    host.env.clock = clock;
    const resources = (content: string) => [file('conf', '/etc/r.conf', content), svc('kept', 'kept.service'), svc('restarted', 'restarted.service', { restartOn: ['conf'] }), svc('dies', 'dies.service')];
    reportOf(await host.apply(declaration(resources('v1'))));
    expect(told).toHaveLength(1);
    const left = told[0]!;
    expect(left.get('kept.service')).toMatchObject({ activeState: 'active', invocationId: 'inv-1' });
    // Restarted by this apply (its file is new): its new invocation, as the second look saw it.
    expect(left.get('restarted.service')).toMatchObject({ activeState: 'active', invocationId: 'inv-2' });
    // Started, then dead by the second look: the watcher is not to take it as left running.
    expect(left.get('dies.service')).toMatchObject({ activeState: 'failed' });
    // A plan that is not applied tells nothing.
    await host.apply(declaration(resources('v2'), { sequence: 2 }), { dryRun: true });
    expect(told).toHaveLength(1);
  });

  it('a unit still starting at both looks is accepted', async () => {
    const { systemd, clock } = withFake();
    systemd.define('slow.service', { kind: 'slowReady', afterMs: 60_000 });
    const report = reportOf(await host.apply(declaration([svc('slow', 'slow.service')])));
    expect(report.outcome).toBe('converged');
    expect(clock.slept).toEqual([1500]);
  });

  it('a unit asked to stop is not waited on', async () => {
    const { systemd, clock } = withFake();
    systemd.define('web.service', { kind: 'stays' }, { running: true });
    const report = reportOf(await host.apply(declaration([svc('web', 'web.service', { state: 'stopped' })])));
    expect(report.outcome).toBe('converged');
    expect(report.steps[0]!.actions).toEqual(['stop']);
    expect(clock.slept).toEqual([]);
    expect(systemd.calls.filter((c) => c.startsWith('query'))).toHaveLength(1); // the plan's batch only
  });

  it('a unit the manager restarted between the looks has died, and fails', async () => {
    const { systemd } = withFake();
    systemd.define('loop.service', { kind: 'restarts', everyMs: 300 });
    const report = reportOf(await host.apply(declaration([svc('loop', 'loop.service')])));
    expect(report.outcome).toBe('failed');
    expect(report.error?.message).toMatch(/loop\.service was restarted by the service manager 5 times between the looks/);
  });

  it('a unit that does not exist is never read as stopped: declared stopped or running, it fails, named', async () => {
    for (const state of ['stopped', 'running'] as const) {
      withFake();
      const report = reportOf(await host.apply(declaration([svc('ghost', 'ghost.service', { state })])));
      expect(report.outcome).toBe('failed');
      expect(report.error).toEqual({ resource: 'ghost', message: expect.stringMatching(/^ghost\.service does not exist \(LoadState=not-found\)/) });
      host.cleanup();
    }
  });

  it('does nothing to a unit that already matches, and asks systemd once for 50 of them', async () => {
    const { systemd, clock } = withFake();
    const units = Array.from({ length: 50 }, (_, i) => `u${i}.service`);
    for (const u of units) systemd.define(u, { kind: 'stays' }, { running: true, enabled: true });
    const report = reportOf(await host.apply(declaration(units.map((u, i) => svc(`s${i}`, u, { enabled: true })))));
    expect(report.steps.every((s) => s.status === 'unchanged')).toBe(true);
    expect(systemd.calls).toEqual([`query ${units.join(' ')}`]);
    expect(clock.slept).toEqual([]);
  });

  it('a changed file restarts exactly the unit that names it; reload: true reloads', async () => {
    const { systemd } = withFake();
    for (const u of ['a.service', 'b.service', 'c.service']) systemd.define(u, { kind: 'stays' }, { running: true });
    const d = (content: string, sequence: number) =>
      declaration([file('conf-a', '/etc/a.conf', content), file('conf-c', '/etc/c.conf', 'c'), svc('a', 'a.service', { restartOn: ['conf-a'] }), svc('b', 'b.service'), svc('c', 'c.service', { restartOn: ['conf-c'], reload: true })], { sequence });
    reportOf(await host.apply(d('1', 1)));
    systemd.calls.length = 0;
    const report = reportOf(await host.apply(d('2', 2)));
    expect(report.outcome).toBe('converged');
    expect(systemd.actions()).toEqual(['restart a.service']);
    expect(report.steps.find((s) => s.resource === 'a')!.actions).toEqual(['restart (conf-a changed)']);
    // The first apply wrote both files: a restarted, c reloaded.
    host.cleanup();
    const second = withFake();
    for (const u of ['a.service', 'b.service', 'c.service']) second.systemd.define(u, { kind: 'stays' }, { running: true });
    reportOf(await host.apply(d('1', 1)));
    expect(second.systemd.actions()).toEqual(['restart a.service', 'reload c.service']);
  });

  it('runs daemon-reload once, before any unit is acted on, when a unit file changed', async () => {
    const { systemd } = withFake();
    systemd.define('x.service');
    systemd.define('y.service');
    host.env.store.update(() => {});
    const { mkdirSync } = await import('node:fs');
    mkdirSync(`${host.root}/etc/systemd/system`, { recursive: true });
    const report = reportOf(await host.apply(declaration([
      file('x-unit', '/etc/systemd/system/x.service', '[Service]\nExecStart=/bin/true\n'),
      file('y-unit', '/etc/systemd/system/y.service', '[Service]\nExecStart=/bin/true\n'),
      svc('x', 'x.service'),
      svc('y', 'y.service'),
    ])));
    expect(report.outcome).toBe('converged');
    expect(systemd.actions()).toEqual(['daemon-reload', 'start x.service', 'start y.service']);
  });

  it('shares one pause among all units started, restarted or reloaded by an apply', async () => {
    const { systemd, clock } = withFake(800);
    for (let i = 0; i < 20; i++) systemd.define(`r${i}.service`);
    const report = reportOf(await host.apply(declaration(Array.from({ length: 20 }, (_, i) => svc(`r${i}`, `r${i}.service`)))));
    expect(report.outcome).toBe('converged');
    expect(clock.slept).toEqual([800]);
    // the plan's batch, one look right after each action, and one batched second look
    expect(systemd.calls.filter((c) => c.startsWith('query'))).toHaveLength(1 + 20 + 1);
  });

  it('a unit dead at once stops the apply; the steps after it are skipped, by name', async () => {
    const { systemd } = withFake();
    systemd.define('dead.service', { kind: 'dies', afterMs: 0 });
    const report = reportOf(await host.apply(declaration([svc('dead', 'dead.service'), file('later', '/etc/later', 'x')])));
    expect(report.steps.map((s) => s.status)).toEqual(['failed', 'skipped']);
    expect(report.error?.message).toMatch(/dead\.service is not running right after start \(ActiveState=failed/);
    expect(report.steps[1]!.detail).toBe('skipped: dead failed before it');
  });

  it('removing a service stops and disables it; removing an uninstalled one succeeds', async () => {
    const { systemd } = withFake();
    systemd.define('gone.service', { kind: 'stays' });
    systemd.define('kept.service', { kind: 'stays' });
    reportOf(await host.apply(declaration([svc('gone', 'gone.service', { enabled: true }), svc('kept', 'kept.service')])));
    systemd.calls.length = 0;
    const removal = reportOf(await host.apply(declaration([svc('kept', 'kept.service')], { sequence: 2 })));
    expect(removal.outcome).toBe('converged');
    expect(systemd.actions()).toEqual(['stop gone.service', 'disable gone.service']);
    systemd.uninstall('kept.service');
    const uninstalled = reportOf(await host.apply(declaration([], { sequence: 3 })));
    expect(uninstalled.outcome).toBe('converged');
    expect(uninstalled.steps[0]).toMatchObject({ resource: 'kept', status: 'done', detail: expect.stringContaining('no longer installed') });
    expect(host.env.store.state.records).toEqual({});
  });

  it('enables and disables as declared', async () => {
    const { systemd } = withFake();
    systemd.define('e.service', { kind: 'stays' }, { running: true, enabled: false });
    const report = reportOf(await host.apply(declaration([svc('e', 'e.service', { enabled: true })])));
    expect(report.steps[0]!.actions).toEqual(['enable']);
    expect(systemd.actions()).toEqual(['enable e.service']);
  });
});
