import { afterEach, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Resource } from '../../src/core/declaration/schema.js';
import { declaration, reportOf, testHost, type TestHost } from '../support/host.js';
import { FakeSystemd, fakeClock } from '../support/fake-systemd.js';

let host: TestHost;
afterEach(() => host?.cleanup());

const LOCK = '/run/app/busy.lock';
const svc = (extra: object = {}): Resource => ({ type: 'service', id: 'app', unit: 'app.service', state: 'running', restartOn: ['conf'], inhibitWhile: LOCK, ...extra });
const conf = (content: string): Resource => ({ type: 'file', id: 'conf', path: '/etc/app.conf', content });
const other = (content: string): Resource => ({ type: 'file', id: 'other', path: '/etc/other.conf', content });

function withFake() {
  const clock = fakeClock();
  const systemd = new FakeSystemd(clock);
  host = testHost({ kinds: { clock, verifyPauseMs: 0, serviceManager: async () => ({ manager: systemd, reason: 'fake' }) } });
  host.env.clock = clock;
  systemd.define('app.service', { kind: 'stays' }, { running: true });
  mkdirSync(join(host.root, 'run/app'), { recursive: true });
  return { clock, systemd };
}

/** A lock holding `pid`, its mtime set to a known time (what the report says the holder holds it since). */
function lock(pid: number | string): string {
  const path = join(host.root, LOCK);
  writeFileSync(path, `${pid}\n`);
  utimesSync(path, new Date('2026-11-30T10:00:00Z'), new Date('2026-11-30T10:00:00Z'));
  return statSync(path).mtime.toISOString();
}

/** A PID that was alive a moment ago and is not now (the child ended and was reaped). */
const deadPid = () => spawnSync('/bin/true').pid;

async function first(systemd: FakeSystemd) {
  reportOf(await host.apply(declaration([conf('1'), other('1'), svc()], { sequence: 1 })));
  systemd.calls.length = 0;
}

describe('a service restart held off while its lock is held (inhibitWhile)', () => {
  it('with a live holder, every other change is made and the restart is deferred, typed: locked by PID since the lock file mtime', async () => {
    const { systemd } = withFake();
    await first(systemd);
    const since = lock(process.pid);
    const report = reportOf(await host.apply(declaration([conf('2'), other('2'), svc()], { sequence: 2 })));
    expect(report.outcome).toBe('converged');
    expect(systemd.actions()).toEqual([]);
    expect(report.steps.filter((s) => s.resource !== 'app').map((s) => s.status)).toEqual(['done', 'done']);
    const step = report.steps.find((s) => s.resource === 'app')!;
    expect(step.status).toBe('deferred');
    expect(step.actions).toEqual(['restart (conf changed)']);
    expect(step.lock).toEqual({ state: 'held', path: LOCK, pid: process.pid, since, waitingSince: expect.any(String), until: expect.any(String) });
    const held = step.lock as Extract<typeof step.lock, { state: 'held' }>;
    expect(Date.parse(held.until) - Date.parse(held.waitingSince)).toBe(600_000);
    expect(step.detail).toMatch(new RegExp(`^deferred: locked by PID ${process.pid} since ${since}`));
    expect(host.env.store.state.records.app!.deferred).toMatchObject({ lock: LOCK, maxMs: 600_000, because: ['conf'], pid: process.pid });
  });

  it('the deferred restart survives a reopened store and a further apply while held, and is done once the lock is gone', async () => {
    const { systemd } = withFake();
    await first(systemd);
    lock(process.pid);
    reportOf(await host.apply(declaration([conf('2'), svc()], { sequence: 2 })));
    host.reopen();
    const still = reportOf(await host.apply(declaration([conf('2'), svc()], { sequence: 3 })));
    expect(still.steps.find((s) => s.resource === 'app')!.status).toBe('deferred');
    expect(systemd.actions()).toEqual([]);
    rmSync(join(host.root, LOCK));
    const released = reportOf(await host.apply(declaration([conf('2'), svc()], { sequence: 4 })));
    const step = released.steps.find((s) => s.resource === 'app')!;
    expect(systemd.actions()).toEqual(['restart app.service']);
    expect(step.status).toBe('done');
    expect(step.lock).toMatchObject({ state: 'released', path: LOCK });
    expect(host.env.store.state.records.app!.deferred).toBeUndefined();
  });

  it('a lock whose holder is dead, or that holds no PID, is ignored and the report says so', async () => {
    const { systemd } = withFake();
    await first(systemd);
    const dead = deadPid();
    lock(dead);
    const report = reportOf(await host.apply(declaration([conf('2'), svc()], { sequence: 2 })));
    expect(systemd.actions()).toEqual(['restart app.service']);
    const step = report.steps.find((s) => s.resource === 'app')!;
    expect(step.status).toBe('done');
    expect(step.lock).toEqual({ state: 'stale', path: LOCK, pid: dead, why: 'dead' });
    expect(step.detail).toMatch(`PID ${dead} is not alive`);
    lock('not a pid');
    const garbled = reportOf(await host.apply(declaration([conf('3'), svc()], { sequence: 3 })));
    expect(garbled.steps.find((s) => s.resource === 'app')!.lock).toEqual({ state: 'stale', path: LOCK, why: 'unreadable' });
  });

  it('held past inhibitMaxMs, the restart goes ahead and the report says so', async () => {
    const { systemd, clock } = withFake();
    await first(systemd);
    lock(process.pid);
    reportOf(await host.apply(declaration([conf('2'), svc({ inhibitMaxMs: 5000 })], { sequence: 2 })));
    clock.advance(4999);
    expect(reportOf(await host.apply(declaration([conf('2'), svc({ inhibitMaxMs: 5000 })], { sequence: 3 }))).steps.find((s) => s.resource === 'app')!.status).toBe('deferred');
    clock.advance(1);
    const report = reportOf(await host.apply(declaration([conf('2'), svc({ inhibitMaxMs: 5000 })], { sequence: 4 })));
    expect(systemd.actions()).toEqual(['restart app.service']);
    expect(report.steps.find((s) => s.resource === 'app')!.lock).toMatchObject({ state: 'overdue', pid: process.pid, maxMs: 5000 });
  });

  it('the newest declaration decides: a restart no longer named in restartOn is dropped, not done later', async () => {
    const { systemd } = withFake();
    await first(systemd);
    lock(process.pid);
    reportOf(await host.apply(declaration([conf('2'), svc()], { sequence: 2 })));
    const report = reportOf(await host.apply(declaration([conf('2'), svc({ restartOn: [] })], { sequence: 3 })));
    expect(report.steps.find((s) => s.resource === 'app')!.status).toBe('unchanged');
    expect(host.env.store.state.records.app!.deferred).toBeUndefined();
    rmSync(join(host.root, LOCK));
    reportOf(await host.apply(declaration([conf('2'), svc({ restartOn: [] })], { sequence: 4 })));
    expect(systemd.actions()).toEqual([]);
  });

  it('without a lock file nothing is held off; the start of a stopped unit is never held off', async () => {
    const { systemd } = withFake();
    await first(systemd);
    reportOf(await host.apply(declaration([conf('2'), svc()], { sequence: 2 })));
    expect(systemd.actions()).toEqual(['restart app.service']);
    systemd.calls.length = 0;
    lock(process.pid);
    reportOf(await host.apply(declaration([conf('2'), svc({ state: 'stopped' })], { sequence: 3 })));
    reportOf(await host.apply(declaration([conf('2'), svc()], { sequence: 4 })));
    expect(systemd.actions()).toEqual(['stop app.service', 'start app.service']);
  });
});
