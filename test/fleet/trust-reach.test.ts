import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { NatsServer, natsUnavailable } from '../support/nats.js';
import { holdsTrust, initMesh, startSite, untilFile, type InitHost, type InitMesh } from '../support/mesh-init.js';

const unavailable = natsUnavailable();
const SITE = 'nantes';

/**
 * One rotation made at the hub, followed by a host that reads the mesh through another server: behind a
 * site's leaf node (the site's copy of the trust root and its notices), and on the third server of a
 * three-server cluster. The host then takes what the new key signs.
 */
async function rotateAndFollow(mesh: InitMesh, control: NatsConnection, host: InitHost): Promise<void> {
  await holdsTrust(control, host.node, 1, 20_000);
  const keyDir = join(mesh.dir, '..', `k-${host.node}`);
  const made = await mesh.meshctl(['keygen', '--out', keyDir]);
  expect(made.code, made.stderr).toBe(0);
  const heard = holdsTrust(control, host.node, 2, 20_000);
  const rotated = await mesh.meshctl(['trust', 'rotate', '--to', join(keyDir, 'operator.nk')]);
  expect(rotated.code, rotated.stderr).toBe(0);
  await heard;
  expect(host.log()).toMatch(/followed the mesh's trust root to version 2/);
  const file = join(mesh.dir, '..', `${host.node}-after.json`);
  writeFileSync(file, JSON.stringify({ version: 1, node: host.node, mode: 'converged', resources: [{ type: 'file', id: 'after', path: '/srv/after', content: 'signed by the new key\n' }] }));
  const sent = await mesh.meshctl(['send', host.node, file]);
  expect(sent.code, sent.stderr).toBe(0);
  await untilFile(host, 'srv/after', 'signed by the new key\n');
}

describe.skipIf(unavailable !== undefined && !process.env.CI)(`a trust rotation reaches a host behind a site's leaf node${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let mesh: InitMesh;
  let leaf: NatsServer;
  beforeAll(async () => {
    mesh = await initMesh();
    const site = await startSite(mesh, SITE);
    leaf = site.leaf;
    expect(site.said).toMatch(/made the site's copy of KV_mesh_trust/);
    expect(site.said).toMatch(/made the site's notices of trust versions \(MESH_TRUSTED\)/);
  }, 120_000);
  afterAll(async () => {
    await mesh?.close();
    await leaf?.stop();
  });

  it('a host on the leaf follows a rotation made at the hub by the site\'s notice (its timed read an hour away), then takes what the new key signs', async () => {
    const host = await mesh.enrol('site-t', { server: leaf.url, config: { rereadMs: 3_600_000 } });
    await rotateAndFollow(mesh, await mesh.control(), host);
  }, 60_000);
});

describe.skipIf(unavailable !== undefined && !process.env.CI)(`a trust rotation on a three-server cluster${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let mesh: InitMesh;
  beforeAll(async () => {
    mesh = await initMesh({ servers: 3 });
  }, 120_000);
  afterAll(async () => {
    await mesh?.close();
  });

  it('a host connected to the third server follows a rotation meshctl made through the cluster (its timed read an hour away), then takes what the new key signs', async () => {
    const host = await mesh.enrol('cluster-t', { server: mesh.servers[2]!.url, config: { rereadMs: 3_600_000 } });
    await rotateAndFollow(mesh, await mesh.control(), host);
  }, 90_000);
});
