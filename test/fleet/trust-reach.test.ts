import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { NatsServer, freePort, natsUnavailable } from '../support/nats.js';
import { initMesh, untilFile, type InitHost, type InitMesh } from '../support/mesh-init.js';
import { heartbeatSubject } from '../../src/link/wire.js';

const unavailable = natsUnavailable();
const SITE = 'nantes';

/** The node's first heartbeat after the call that says it holds this trust version. */
function holds(control: NatsConnection, node: string, version: number, timeoutMs = 20_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => (sub.unsubscribe(), reject(new Error(`${node} did not say it holds trust version ${version} within ${timeoutMs} ms`))), timeoutMs);
    const sub = control.subscribe(heartbeatSubject(node), {
      callback: (_e, m) => {
        if ((JSON.parse(m.string()) as { trustVersion?: number }).trustVersion !== version) return;
        clearTimeout(timer);
        sub.unsubscribe();
        resolve();
      },
    });
  });
}

/**
 * One rotation made at the hub, followed by a host that reads the mesh through another server: behind a
 * site's leaf node (the site's copy of the trust root and its notices), and on the third server of a
 * three-server cluster. The host then takes what the new key signs.
 */
async function rotateAndFollow(mesh: InitMesh, control: NatsConnection, host: InitHost): Promise<void> {
  await holds(control, host.node, 1);
  const keyDir = join(mesh.dir, '..', `k-${host.node}`);
  const made = await mesh.meshctl(['keygen', '--out', keyDir]);
  expect(made.code, made.stderr).toBe(0);
  const heard = holds(control, host.node, 2);
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
    const leafPort = await freePort();
    const made = await mesh.meshctl(['init', '--leaf', SITE, '--port', String(leafPort)]);
    expect(made.code, made.stderr).toBe(0);
    leaf = await NatsServer.start({ port: leafPort, wholeConfig: join(mesh.dir, 'sites', SITE, 'nats-server.conf') });
    // The leaf connects within a second or so; until then the hub cannot reach its domain.
    let site = await mesh.meshctl(['site', SITE]);
    for (let tries = 0; site.code !== 0 && tries < 20; tries++) {
      await new Promise((r) => setTimeout(r, 500));
      site = await mesh.meshctl(['site', SITE]);
    }
    expect(site.code, site.stderr).toBe(0);
    expect(site.stdout).toMatch(/made the site's copy of KV_mesh_trust/);
    expect(site.stdout).toMatch(/made the site's notices of trust versions \(MESH_TRUSTED\)/);
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
