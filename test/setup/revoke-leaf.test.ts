import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, credsAuthenticator } from '@nats-io/transport-node';
import { NatsServer, natsUnavailable } from '../support/nats.js';
import { initMesh, startSite, type InitHost, type InitMesh } from '../support/mesh-init.js';
import { refusedAfterRevocation, waitFor } from '../support/revocation.js';

const unavailable = natsUnavailable();
const SITE = 'lyon';

describe.skipIf(unavailable !== undefined && !process.env.CI)(`revoking a host of a site, through its leaf node${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let mesh: InitMesh;
  let leaf: NatsServer;
  let removed: InitHost;
  let rotated: InitHost;
  let kept: InitHost;
  const hosts = () => [removed, rotated, kept].filter(Boolean);

  beforeAll(async () => {
    mesh = await initMesh();
    ({ leaf } = await startSite(mesh, SITE));
    removed = await mesh.enrol('site-gone', { server: leaf.url });
    rotated = await mesh.enrol('site-rotated', { server: leaf.url });
    kept = await mesh.enrol('site-kept', { server: leaf.url });
  }, 180_000);
  afterAll(async () => {
    await mesh?.close();
    await leaf?.stop();
  });

  it("gives the leaf the full resolver and an uplink of the system account, with the site's own user", () => {
    const conf = readFileSync(join(mesh.dir, 'sites', SITE, 'nats-server.conf'), 'utf8');
    expect(conf).toMatch(/resolver: \{\n {2}type: full\n {2}dir: ".*\/sites\/lyon\/jwt"/);
    expect(conf).toContain(`credentials: "${join(mesh.dir, 'sites', SITE, 'leaf-system.creds')}"`);
  });

  it('node-remove reaches the leaf node: the site took the push, and the host connected to it is closed and refused within seconds', async () => {
    const watched = await refusedAfterRevocation(leaf.url, removed.creds);
    const out = await mesh.meshctl(['node-remove', removed.node]);
    expect(out.code, out.stderr + out.stdout).toBe(0);
    expect(out.stdout).toMatch(/^ {2}leaf-lyon +took it$/m);
    expect(await watched.closed).toMatch(/revoked|authorization/i);
    await waitFor(`the daemon of ${removed.node} told it was refused`, () => /revoked|authorization/i.test(removed.log()), hosts());
    await expect(connect({ servers: leaf.url, authenticator: credsAuthenticator(readFileSync(removed.creds)), reconnect: false })).rejects.toThrow(/authorization/i);
    const ok = await connect({ servers: leaf.url, authenticator: credsAuthenticator(readFileSync(kept.creds)), reconnect: false });
    await ok.close();
  }, 90_000);

  it('node-creds --rotate through the leaf: the old credentials are refused there, the new ones admitted', async () => {
    const watched = await refusedAfterRevocation(leaf.url, rotated.creds);
    const newCreds = join(mesh.dir, '..', 'site-rotated-new.creds');
    const out = await mesh.meshctl(['node-creds', rotated.node, '--rotate', '--out', newCreds]);
    expect(out.code, out.stderr + out.stdout).toBe(0);
    expect(out.stdout).toMatch(/^ {2}leaf-lyon +took it$/m);
    expect(await watched.closed).toMatch(/revoked|authorization/i);
    const fresh = await connect({ servers: leaf.url, authenticator: credsAuthenticator(readFileSync(newCreds)), reconnect: false });
    await fresh.close();
  }, 90_000);

  it('a leaf node down during a revocation is said by name (exit 1), and refuses the user once it is back and the push is made again', async () => {
    await leaf.kill();
    const out = await mesh.meshctl(['node-remove', kept.node]);
    expect(out.code).toBe(1);
    expect(out.stdout).toMatch(/^ {2}leaf-lyon +did not answer within 5 s/m);
    expect(out.stdout).toMatch(/^ {2}mesh +took it$/m);
    await leaf.run();
    // The leaf uplink comes back within a second or so; the push is made again until the site takes it.
    await waitFor('the site taking the push again', async () => (await mesh.meshctl(['account-push'])).code === 0, hosts());
    await expect(connect({ servers: leaf.url, authenticator: credsAuthenticator(readFileSync(kept.creds)), reconnect: false })).rejects.toThrow(/authorization/i);
  }, 90_000);
});
