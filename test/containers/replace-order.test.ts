import { beforeAll, describe, expect, it } from 'vitest';
import { container, skip, unavailable, useContainerScene } from './scene.js';

/** Every container in the engine, as `NAME STATE` lines in name order. */
async function everyContainer(scene: ReturnType<typeof useContainerScene>): Promise<string[]> {
  const ids = (await scene.podman.podman(['ps', '-a', '-q'])).stdout.trim().split('\n').filter(Boolean);
  return Promise.all(ids.map((id) => scene.inspect(id, '{{.Name}} {{.State.Status}}'))).then((lines) => lines.sort());
}

describe.skipIf(skip)(`a container's replacement is made before the one it replaces goes, on podman's API${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const scene = useContainerScene();
  let ref: string;
  beforeAll(async () => {
    ref = await scene.podman.pushImage('web');
  });

  /** The engine's next call of this name fails once, as a power cut would end the apply there. */
  function cutAt(call: 'create' | 'stop' | 'rename'): void {
    const engine = scene.engine as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    engine[call] = async () => {
      delete engine[call];
      throw new Error(`cut before ${call}`);
    };
  }

  it('a create the engine refuses leaves the old container running, and says why', async () => {
    await scene.report([container({ ref }, { env: { MODE: 'one' } })]);
    const before = await scene.inspect('web', '{{.Id}}');
    cutAt('create');
    const failed = await scene.report([container({ ref }, { env: { MODE: 'two' } })]);
    expect(failed.outcome).toBe('failed');
    expect(failed.steps[0]!.detail).toBe('cut before create');
    expect(await scene.inspect('web', '{{.Id}}')).toBe(before);
    expect(await everyContainer(scene)).toEqual(['web running']);
  });

  it('cut after the replacement was made: the old one still runs beside it; the next apply removes the leftover and replaces', async () => {
    await scene.report([container({ ref }, { env: { MODE: 'one' } })]);
    cutAt('stop');
    const cut = await scene.report([container({ ref }, { env: { MODE: 'two' } })]);
    expect(cut.outcome).toBe('failed');
    expect(await everyContainer(scene)).toEqual(['web running', 'web.mesh-next created']);
    const next = await scene.report([container({ ref }, { env: { MODE: 'two' } })]);
    expect(next.outcome, JSON.stringify(next)).toBe('converged');
    expect(next.steps[0]!.actions).toEqual(['remove the leftover web.mesh-next', 'replace (env differs)', 'start']);
    expect(await everyContainer(scene)).toEqual(['web running']);
    expect(await scene.inspect('web', '{{range .Config.Env}}{{println .}}{{end}}')).toContain('MODE=two');
  });

  it('cut after the old one was removed: the replacement is there under its own name; the next apply renames and starts it, making nothing anew', async () => {
    await scene.report([container({ ref }, { env: { MODE: 'one' } })]);
    cutAt('rename');
    const cut = await scene.report([container({ ref }, { env: { MODE: 'two' } })]);
    expect(cut.outcome).toBe('failed');
    expect(await everyContainer(scene)).toEqual(['web.mesh-next created']);
    const made = await scene.inspect('web.mesh-next', '{{.Id}}');
    const next = await scene.report([container({ ref }, { env: { MODE: 'two' } })]);
    expect(next.outcome, JSON.stringify(next)).toBe('converged');
    expect(next.steps[0]!.actions).toEqual(['rename web.mesh-next → web', 'start']);
    expect(await scene.inspect('web', '{{.Id}}')).toBe(made);
    expect(await everyContainer(scene)).toEqual(['web running']);
    expect(scene.host.env.store.state.records.web).toMatchObject({ container: { id: made } });
  });

  it('each change of a replacement is made durable before the next: the engine\'s storage synced after the creation, the removal and the rename', async () => {
    await scene.report([container({ ref }, { env: { MODE: 'one' } })]);
    const calls: string[] = [];
    const engine = scene.engine as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    for (const call of ['create', 'stop', 'remove', 'rename', 'start']) {
      const real = engine[call]!.bind(engine);
      engine[call] = (...args: unknown[]) => (calls.push(call), real(...args));
    }
    scene.onSync = (path) => calls.push(`sync ${path}`);
    const report = await scene.report([container({ ref }, { env: { MODE: 'two' } })]);
    for (const call of ['create', 'stop', 'remove', 'rename', 'start']) delete engine[call];
    expect(report.outcome, JSON.stringify(report)).toBe('converged');
    const root = (await scene.podman.podman(['info', '--format', '{{.Store.GraphRoot}}'])).stdout.trim();
    expect(calls).toEqual(['create', `sync ${root}`, 'stop', 'remove', `sync ${root}`, 'rename', `sync ${root}`, 'start']);
  });
});
