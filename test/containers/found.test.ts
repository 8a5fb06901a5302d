import { beforeAll, describe, expect, it } from 'vitest';
import { container, skip, unavailable, useContainerScene } from './scene.js';

/** A container found under a declared name, that the host did not make. */
describe.skipIf(skip)(`a container found under the declared name${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const scene = useContainerScene();
  let ref: string;
  beforeAll(async () => {
    ref = await scene.podman.pushImage('found');
  });
  const found = async (running: boolean) => {
    await scene.podman.podman(['run', '-d', '--name', 'web', '--label', 'owner=someone', scene.podman.baseImage, 'sleep', '1000']);
    if (!running) await scene.podman.podman(['stop', '-t', '0', 'web']);
    return scene.inspect('web', '{{.Id}}');
  };

  it('is held on an adopted machine: left running as found, reported', async () => {
    const id = await found(true);
    const report = await scene.report([container({ ref })], { mode: 'adopted' });
    expect(report.outcome).toBe('converged');
    expect(report.steps[0]).toMatchObject({ status: 'held', actions: ['hold'] });
    expect(await scene.inspect('web', '{{.Id}} {{.State.Status}}')).toBe(`${id} running`);
    expect(scene.host.env.store.state.records.web).toBeUndefined();
  });

  it('is taken on a converged machine (renamed aside and stopped, recorded), and given back, running again, when the resource leaves', async () => {
    const id = await found(true);
    const report = await scene.report([container({ ref })]);
    expect(report.outcome, JSON.stringify(report)).toBe('converged');
    expect(report.steps[0]!.actions).toEqual(['take (the container found is renamed web.mesh-original and stopped)', `pull ${ref}`, 'create', 'start']);
    expect(await scene.inspect('web.mesh-original', '{{.Id}} {{.State.Status}}')).toBe(`${id} exited`);
    expect(await scene.inspect('web', '{{.Config.Labels.owner}}')).toBe('<no value>');
    expect(scene.host.env.store.state.records.web?.container?.original).toEqual({ kind: 'container', id, name: 'web', aside: 'web.mesh-original', running: true });

    const gone = await scene.report([]);
    expect(gone.steps[0]!.actions).toEqual(['stop', 'remove', 'give web back and start it']);
    expect(await scene.inspect('web', '{{.Id}} {{.State.Status}}')).toBe(`${id} running`);
    expect((await scene.podman.podman(['ps', '-a', '--format', '{{.Names}}'])).stdout.trim()).toBe('web');
  });

  it('is taken with take on an adopted machine; a stopped original is given back stopped', async () => {
    const id = await found(false);
    const report = await scene.report([container({ ref }, { take: true })], { mode: 'adopted' });
    expect(report.steps[0]!.actions[0]).toBe('take (the container found is renamed web.mesh-original and stopped)');
    await scene.report([], { mode: 'adopted' });
    expect(await scene.inspect('web', '{{.Id}} {{.State.Status}}')).toBe(`${id} exited`);
  });
});
