import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { natsArchiveObjects } from '../../src/kinds/archive/objects.js';
import { runCli } from '../support/cli.js';
import { NatsServer } from '../support/nats.js';
import { container, skip, unavailable, useContainerScene } from './scene.js';

/** Images through the mesh's own store: meshctl put-image uploads, the host streams, checks and loads. */
describe.skipIf(skip)(`images from the mesh's archive store${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const scene = useContainerScene();
  let server: NatsServer;
  let nc: NatsConnection;
  beforeAll(async () => {
    server = await NatsServer.start();
    nc = await connect({ servers: server.url });
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });
  const putImage = (file: string, name: string) => runCli('meshctl', ['put-image', file, '--name', name, '--server', server.url, '--json']);

  it('put-image uploads a podman save archive and prints the image field; a container naming it is loaded, created and started', async () => {
    const saved = await scene.podman.saveImage('mesh');
    const put = await putImage(saved.path, 'app-1.tar');
    expect(put.code, put.stderr).toBe(0);
    const printed = JSON.parse(put.stdout) as { image: { object: string; sha256: string }; tags: string[] };
    expect(printed.image).toEqual({ object: 'app-1.tar', sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(printed.tags).toEqual([saved.name]);

    scene.objects = async () => natsArchiveObjects(nc);
    const report = await scene.report([container(printed.image)]);
    expect(report.outcome, JSON.stringify(report)).toBe('converged');
    expect(report.steps[0]!.actions).toEqual(['load object app-1.tar', 'create', 'start']);
    expect(await scene.inspect('web', '{{.Config.Labels.variant}} {{.State.Status}}')).toBe('mesh running');
    // Loaded once: the next apply finds the image by the archive's digest, and the container as declared.
    const again = await scene.report([container(printed.image)]);
    expect(again.steps[0]!.status).toBe('unchanged');
  });

  it('an object whose bytes are not the declared sha256 fails its step, and the engine never loads it', async () => {
    const saved = await scene.podman.saveImage('forged');
    const put = await putImage(saved.path, 'forged.tar');
    expect(put.code, put.stderr).toBe(0);
    scene.objects = async () => natsArchiveObjects(nc);
    const report = await scene.report([container({ object: 'forged.tar', sha256: 'f'.repeat(64) })]);
    expect(report.outcome).toBe('failed');
    expect(report.error?.message).toMatch(/sha256/);
    expect((await scene.podman.podman(['image', 'exists', saved.name])).code).toBe(1);
    expect((await scene.podman.podman(['ps', '-a', '-q'])).stdout.trim()).toBe('');
  });

  it('put-image refuses a file that is not an image archive, uploading nothing', async () => {
    const file = join(scene.podman.scratch, 'not-an-image.tar');
    writeFileSync(file, 'plain text, not a tar');
    const put = await putImage(file, 'nothing.tar');
    expect(put.code).toBe(3);
    expect(put.stderr).toMatch(/is not an image archive: .*nothing was uploaded/);
    expect(await natsArchiveObjects(nc).info('nothing.tar')).toBeUndefined();
  });
});
