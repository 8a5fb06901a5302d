import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { podmanUnavailable, startPodman, type Podman } from '../support/podman.js';

/** The engine the container tests run against: podman's API service in the suite's systemd container. */
const unavailable = podmanUnavailable();
describe.skipIf(unavailable !== undefined && !process.env.CI)(`the podman harness${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let engine: Podman;
  beforeAll(async () => {
    engine = await startPodman();
  });
  afterAll(async () => engine?.stop());

  it('dockerode lists, out here, a container podman runs in the systemd container', async () => {
    await engine.podman(['run', '-d', '--name', 'listed', '--label', 'mesh-host.test=yes', engine.baseImage, 'sleep', '1000']);
    const docker = new Docker({ socketPath: engine.socket });
    const listed = await docker.listContainers({ all: true, filters: { label: ['mesh-host.test=yes'] } });
    expect(listed.map((c) => [c.Names, c.State])).toEqual([[['/listed'], 'running']]);
  });

  it('an image pushed to the local registry is pulled by its digest through the API', async () => {
    const ref = await engine.pushImage('pulled');
    expect(ref).toMatch(/^127\.0\.0\.1:5000\/busybox-pulled@sha256:[0-9a-f]{64}$/);
    const docker = new Docker({ socketPath: engine.socket });
    await expect(docker.getImage(ref).inspect()).rejects.toThrow();
    const stream = await docker.pull(ref);
    await new Promise((resolve, reject) => docker.modem.followProgress(stream, (err) => (err ? reject(err) : resolve(undefined))));
    const image = await docker.getImage(ref).inspect();
    expect(image.RepoDigests).toContain(ref);
    expect(image.Config.Labels).toEqual({ variant: 'pulled' });
  });
});
