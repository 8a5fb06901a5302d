import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { Resource } from '../../src/core/declaration/schema.js';
import { useApplyInside } from '../support/apply-inside.js';
import { projectDir } from '../support/cli.js';
import { containerUnavailable, startSystemdContainer } from '../support/systemd-container.js';

/**
 * The scenarios of the services' second look on a real systemd, booted in a container over a volatile copy of
 * this machine's root, with mesh-host running inside it. The container's / is a throwaway tmpfs, so
 * mesh-host converges it as its --root: unit files land where that systemd reads them.
 */
const unavailable = containerUnavailable();
describe.skipIf(unavailable !== undefined && !process.env.CI)(`services on a real systemd${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const inside = useApplyInside('systemd', {
    start: (binds) => startSystemdContainer({ binds }),
    first: [{ type: 'directory', id: 'unit-dir', path: '/etc/systemd/system', take: true }],
  });
  const { apply } = inside;

  const unitFile = (name: string, body: string): Resource => ({ type: 'file', id: `${name}-unit`, path: `/etc/systemd/system/${name}.service`, content: `[Unit]\nDescription=${name}\n\n[Service]\n${body}\n` });
  const service = (name: string, extra: object = {}): Resource => ({ type: 'service', id: name, unit: `${name}.service`, state: 'running', restartOn: [`${name}-unit`], ...extra });

  const show = async (unit: string) => {
    const r = await inside.container.exec('systemctl', ['show', '-p', 'ActiveState,InvocationID,NRestarts', unit]);
    return Object.fromEntries(r.stdout.trim().split('\n').map((l) => l.split('=') as [string, string]));
  };

  it('a unit that dies 0.22 s after starting fails the apply, named', async () => {
    const { code, report } = await apply([unitFile('dies', "ExecStart=/bin/sh -c 'sleep 0.22; exit 1'"), service('dies')]);
    expect(code).toBe(1);
    expect(report.outcome).toBe('failed');
    expect(report.error?.resource).toBe('dies');
    // On a quiet machine the first look comes well within 0.22 s and the second look catches the death;
    // on a loaded one the first look itself can come after it, or find the unit still starting (the
    // service manager had not yet run its command when asked). Either way the apply fails on this unit,
    // with the state the service manager gave.
    expect(report.error?.message).toMatch(
      /^dies\.service (was (running|starting) at the first look and is not at the second|is not running right after start) \(ActiveState=failed, SubState=failed, Result=exit-code, seen \d+ ms after the (start|action)\)/,
    );
  });

  it('a unit with Restart=always that keeps dying fails', async () => {
    const { code, report } = await apply([unitFile('flaps', "ExecStart=/bin/sh -c 'sleep 0.1; exit 1'\nRestart=always\nRestartSec=300ms"), service('flaps')]);
    expect(code).toBe(1);
    expect(report.error?.resource).toBe('flaps');
    expect(report.error?.message).toMatch(/flaps\.service (was restarted by the service manager \d+ times between the looks|was (running|starting) at the first look and is not at the second)/);
  });

  it('a Type=notify unit slow to become ready is accepted: never a wait for it to come up', async () => {
    const { code, report } = await apply([unitFile('slow', "Type=notify\nNotifyAccess=all\nExecStart=/bin/sh -c 'sleep 20; systemd-notify --ready; exec sleep 1000'"), service('slow')]);
    expect(code, JSON.stringify(report)).toBe(0);
    expect(report.outcome).toBe('converged');
    expect((await show('slow.service')).ActiveState).toBe('activating');
  });

  it('a unit declared stopped is not paused for', async () => {
    const first = await apply([unitFile('calm', 'ExecStart=/bin/sleep 1000'), service('calm')]);
    expect(first.code).toBe(0);
    expect(first.report.said).toContainEqual(expect.stringMatching(/^second look at calm\.service after a pause of \d+ ms \(verifying took \d+ ms\)$/));
    const { code, report } = await apply([unitFile('calm', 'ExecStart=/bin/sleep 1000'), service('calm', { state: 'stopped' })]);
    expect(code).toBe(0);
    expect(report.steps.find((s) => s.resource === 'calm')!.actions).toEqual(['stop']);
    expect(report.said.some((s) => s.startsWith('second look'))).toBe(false);
  });

  it('a restart whose stop takes a moment is under way at the first look, not dead, and is accepted once up', async () => {
    const state = join(inside.work, 'slow-stop-state');
    // The unit takes 0.8 s to stop: the look right after `restart --no-block` finds it deactivating, the restart's job queued.
    const units = (config: string): Resource[] => [
      unitFile('slowstop', "ExecStart=/bin/sh -c 'trap \"sleep 0.8; exit 0\" TERM; while :; do sleep 0.1; done'"),
      { type: 'file', id: 'slowstop-conf', path: '/etc/slowstop.conf', content: config },
      service('slowstop', { restartOn: ['slowstop-unit', 'slowstop-conf'] }),
    ];
    expect((await apply(units('a'), { state })).code).toBe(0);
    const before = await show('slowstop.service');
    const { code, report } = await apply(units('b'), { state, sequence: 2 });
    expect(report.error).toBeUndefined();
    expect(code).toBe(0);
    expect(report.steps.filter((s) => s.type === 'service').map((s) => [s.actions, s.status])).toEqual([[['restart (slowstop-conf changed)'], 'done']]);
    const after = await show('slowstop.service');
    expect(after.ActiveState).toBe('active');
    expect(after.InvocationID).not.toBe(before.InvocationID);
  });

  it('a restart whose job waits behind another unit\'s is the restart asked for, not one between the looks', async () => {
    const state = join(inside.work, 'queued-restart-state');
    // `late` starts before `gate`, so it stops after it; gate takes 0.6 s to stop. Restarting both, gate
    // first, late's restart job waits for gate's stop: the look right after it finds late still up on its old
    // run, the job queued. By the second look (1.5 s on) the restart has run and late is on a new
    // invocation: the host's own restart, which must be accepted.
    const units = (config: string): Resource[] => [
      unitFile('gate', "ExecStart=/bin/sh -c 'trap \"sleep 0.6; exit 0\" TERM; while :; do sleep 0.1; done'"),
      { type: 'file', id: 'late-unit', path: '/etc/systemd/system/late.service', content: '[Unit]\nDescription=late\nBefore=gate.service\n\n[Service]\nExecStart=/bin/sleep 1000\n' },
      { type: 'file', id: 'pair-conf', path: '/etc/pair.conf', content: config },
      service('gate', { restartOn: ['gate-unit', 'pair-conf'] }),
      service('late', { restartOn: ['late-unit', 'pair-conf'] }),
    ];
    expect((await apply(units('a'), { state })).code).toBe(0);
    const before = await show('late.service');
    const { code, report } = await apply(units('b'), { state, sequence: 2 });
    expect(report.error).toBeUndefined();
    expect(code).toBe(0);
    expect(report.steps.filter((s) => s.type === 'service').map((s) => [s.resource, s.status])).toEqual([['gate', 'done'], ['late', 'done']]);
    const after = await show('late.service');
    expect(after.ActiveState).toBe('active');
    expect(after.InvocationID).not.toBe(before.InvocationID);
    expect(after.NRestarts).toBe(before.NRestarts);
  });

  it('a file change restarts exactly the unit that names it, once', async () => {
    const state = join(inside.work, 'restart-state');
    const units = (config: string): Resource[] => [
      unitFile('r1', 'ExecStart=/bin/sleep 1000'),
      unitFile('r2', 'ExecStart=/bin/sleep 1000'),
      unitFile('r3', 'ExecStart=/bin/sleep 1000'),
      { type: 'file', id: 'r2-conf', path: '/etc/r2.conf', content: config },
      service('r1'),
      service('r2', { restartOn: ['r2-unit', 'r2-conf'] }),
      service('r3'),
    ];
    expect((await apply(units('a'), { state })).code).toBe(0);
    const before = await Promise.all(['r1', 'r2', 'r3'].map((u) => show(`${u}.service`)));
    const { code, report } = await apply(units('b'), { state, sequence: 2 });
    expect(code).toBe(0);
    const after = await Promise.all(['r1', 'r2', 'r3'].map((u) => show(`${u}.service`)));
    expect(after[0]!.InvocationID).toBe(before[0]!.InvocationID);
    expect(after[1]!.InvocationID).not.toBe(before[1]!.InvocationID);
    expect(after[2]!.InvocationID).toBe(before[2]!.InvocationID);
    expect(report.steps.filter((s) => s.type === 'service').map((s) => s.actions)).toEqual([[], ['restart (r2-conf changed)'], []]);

    // status and inventory show the declared services' states, read from this systemd.
    for (const command of ['status', 'inventory']) {
      const r = await inside.container.exec(process.execPath, [join(projectDir, 'bin/mesh-host'), command, '--json', '--state-dir', state, '--log-level', 'warn']);
      expect(r.code, r.stderr).toBe(0);
      const services = (JSON.parse(r.stdout) as { services: Array<{ unit: string; activeState: string }> | { reason: string } }).services;
      if (!Array.isArray(services)) throw new Error(`${command} --json gave no service states: ${services.reason}`);
      expect(services.map((x) => `${x.unit} ${x.activeState}`)).toEqual(['r1.service active', 'r2.service active', 'r3.service active']);
    }
  });

  it('a unit that does not exist, declared stopped, fails, named', async () => {
    const { code, report } = await apply([{ type: 'service', id: 'ghost', unit: 'ghost.service', state: 'stopped' }]);
    expect(code).toBe(1);
    expect(report.error).toEqual({ resource: 'ghost', message: expect.stringMatching(/^ghost\.service does not exist \(LoadState=not-found\)/) });
  });
});
