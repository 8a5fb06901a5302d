import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Resource } from '../../src/core/declaration/schema.js';
import { container, skip, unavailable, useContainerScene } from '../containers/scene.js';

const LOCK = '/run/web/busy.lock';
const conf = (content: string): Resource => ({ type: 'file', id: 'conf', path: '/etc/web.conf', content });

describe.skipIf(skip)(`a container's replacement held off by a lock, through podman's API${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const scene = useContainerScene();
  let ref: string;
  let holder: ChildProcess | undefined;
  beforeAll(async () => {
    ref = await scene.podman.pushImage('web');
  });
  afterEach(() => {
    holder?.kill('SIGKILL');
    holder = undefined;
  });

  /** A live holder: a sleep of this machine, its PID written in the lock under the host's root. */
  const hold = (): number => {
    holder = spawn('sleep', ['600'], { stdio: 'ignore' });
    mkdirSync(join(scene.host.root, 'run/web'), { recursive: true });
    writeFileSync(join(scene.host.root, LOCK), `${holder.pid}\n`);
    return holder.pid!;
  };

  it('with a live holder the file changes and the container is left as it runs, deferred; once the lock is gone the next apply replaces it', async () => {
    const web = (mode: string) => container({ ref }, { env: { MODE: mode }, inhibitWhile: LOCK });
    expect((await scene.report([conf('1'), web('one')])).outcome).toBe('converged');
    const before = await scene.inspect('web', '{{.Id}}');
    const pid = hold();

    const deferred = await scene.report([conf('2'), web('two')]);
    expect(deferred.outcome, JSON.stringify(deferred)).toBe('converged');
    expect(deferred.steps.map((s) => [s.resource, s.status])).toEqual([['conf', 'done'], ['web', 'deferred']]);
    const step = deferred.steps[1]!;
    expect(step.actions).toEqual(['replace (env differs)', 'start']);
    expect(step.lock).toMatchObject({ state: 'held', path: LOCK, pid });
    expect(step.detail).toMatch(new RegExp(`^deferred: locked by PID ${pid} since `));
    expect(await scene.inspect('web', '{{.Id}}')).toBe(before);
    expect(await scene.inspect('web', '{{.State.Status}}')).toBe('running');
    expect(scene.host.env.store.state.records.web!.deferred).toMatchObject({ lock: LOCK, pid });

    rmSync(join(scene.host.root, LOCK));
    const replaced = await scene.report([conf('2'), web('two')]);
    expect(replaced.steps[1]).toMatchObject({ status: 'done', lock: { state: 'released', path: LOCK } });
    expect(await scene.inspect('web', '{{.Id}}')).not.toBe(before);
    expect(await scene.inspect('web', '{{range .Config.Env}}{{println .}}{{end}}')).toContain('MODE=two');
    expect(scene.host.env.store.state.records.web!.deferred).toBeUndefined();
  });

  it('a restart for a changed file waits for a live holder, and goes at once past a dead one', async () => {
    const web = container({ ref }, { restartOn: ['conf'], inhibitWhile: LOCK });
    await scene.report([conf('1'), web]);
    const started = await scene.inspect('web', '{{.State.StartedAt}}');
    hold();
    const deferred = await scene.report([conf('2'), web]);
    expect(deferred.steps[1]).toMatchObject({ status: 'deferred', actions: ['restart (conf changed)'] });
    expect(await scene.inspect('web', '{{.State.StartedAt}}')).toBe(started);
    const dead = holder!;
    dead.kill('SIGKILL');
    await new Promise((resolve) => dead.once('exit', resolve));
    const restarted = await scene.report([conf('2'), web]);
    expect(restarted.steps[1]).toMatchObject({ status: 'done', actions: ['restart (conf changed)'], lock: { state: 'stale', why: 'dead', pid: dead.pid } });
    expect(await scene.inspect('web', '{{.State.StartedAt}}')).not.toBe(started);
  });
});
