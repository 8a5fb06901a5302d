import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, credsAuthenticator } from '@nats-io/transport-node';
import { encodeAccount } from '@nats-io/jwt';
import { fromSeed } from '@nats-io/nkeys';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, type InitHost, type InitMesh } from '../support/mesh-init.js';
import { refusedAfterRevocation, waitFor } from '../support/revocation.js';

const unavailable = natsUnavailable();

/**
 * Turns a mesh directory into what meshctl init made before the full resolver: the servers preload the
 * accounts in memory, the system account's JWT has no limits, and the directory names no system user.
 */
async function asMadeBefore(dir: string): Promise<void> {
  const seed = (rel: string) => fromSeed(new TextEncoder().encode(readFileSync(join(dir, rel), 'utf8').trim()));
  const system = seed('nats/system.nk');
  const oldSystemJwt = await encodeAccount('SYS', system, {}, { signer: seed('nats/operator.nk') });
  const currentSystemJwt = readFileSync(join(dir, 'nats/system.jwt'), 'utf8').trim();
  const conf = join(dir, 'nats-server.conf');
  const text = readFileSync(conf, 'utf8').replace(/^resolver: \{\n(?: {2}.*\n)*?\}\n/m, 'resolver: MEMORY\n').replace(currentSystemJwt, oldSystemJwt);
  writeFileSync(conf, text);
  writeFileSync(join(dir, 'nats/system.jwt'), `${oldSystemJwt}\n`);
  const mesh = JSON.parse(readFileSync(join(dir, 'mesh.json'), 'utf8')) as Record<string, unknown>;
  delete mesh.systemCreds;
  delete mesh.serverNames;
  writeFileSync(join(dir, 'mesh.json'), JSON.stringify(mesh, null, 2));
  rmSync(join(dir, 'nats/system.creds'));
}

describe.skipIf(unavailable !== undefined && !process.env.CI)(`a mesh made with the memory resolver, moved to the full resolver by meshctl resolver-upgrade${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let mesh: InitMesh;
  let host: InitHost;
  let gone: InitHost;

  beforeAll(async () => {
    mesh = await initMesh();
    await mesh.servers[0]!.kill();
    await asMadeBefore(mesh.dir);
    await mesh.servers[0]!.run();
    host = await mesh.enrol('old-kept');
    gone = await mesh.enrol('old-gone');
  }, 120_000);
  afterAll(async () => {
    await mesh?.close();
  });

  it('keeps working as it was, and node-remove says why it cannot revoke and what to run', async () => {
    expect(readFileSync(join(mesh.dir, 'nats-server.conf'), 'utf8')).toMatch(/^resolver: MEMORY$/m);
    const refused = await mesh.meshctl(['node-remove', gone.node]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/keep its accounts in memory \(resolver: MEMORY/);
    expect(refused.stderr).toMatch(/meshctl resolver-upgrade --mesh /);
    const status = await mesh.meshctl(['status', host.node]);
    expect(status.code, status.stderr).toBe(0);
  });

  it('rewrites the configuration; once the server restarts the hosts reconnect with what they have, and a removal is pushed and refused', async () => {
    const upgraded = await mesh.meshctl(['resolver-upgrade']);
    expect(upgraded.code, upgraded.stderr).toBe(0);
    const conf = readFileSync(join(mesh.dir, 'nats-server.conf'), 'utf8');
    expect(conf).toMatch(/^resolver: \{\n {2}type: full\n/m);
    expect((await mesh.meshctl(['resolver-upgrade'])).stderr).toMatch(/already runs the full account resolver/);

    const reconnects = host.log().split('link: reconnected').length;
    await mesh.servers[0]!.kill();
    await mesh.servers[0]!.run();
    await waitFor(`${host.node} reconnecting to the restarted server`, () => host.log().split('link: reconnected').length > reconnects, [host]);

    const watched = await refusedAfterRevocation(mesh.servers[0]!.url, gone.creds);
    const removed = await mesh.meshctl(['node-remove', gone.node]);
    expect(removed.code, removed.stderr + removed.stdout).toBe(0);
    expect(await watched.closed).toMatch(/revoked|authorization/i);
    await expect(connect({ servers: mesh.servers[0]!.url, authenticator: credsAuthenticator(readFileSync(gone.creds)), reconnect: false })).rejects.toThrow(/authorization/i);
    const status = await mesh.meshctl(['status', host.node]);
    expect(status.code, status.stderr).toBe(0);
  }, 90_000);
});
