import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createUser } from '@nats-io/nkeys';
import { connect, nkeyAuthenticator } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { ensureWire } from '../../src/link/control.js';
import { sign } from '../../src/declaration/envelope.js';
import { NatsServer, natsUnavailable } from '../support/nats.js';
import { runCli } from '../support/cli.js';
import { scratch } from '../support/tree.js';
import { spawn } from 'node:child_process';
import { projectDir } from '../support/cli.js';

const unavailable = natsUnavailable();
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(unavailable !== undefined && !process.env.CI)(`a server that demands an nkey${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const s = scratch('mesh-host-auth-');
  const user = createUser();
  const seedFile = join(s.dir, 'user.nk');
  let server: NatsServer;
  beforeAll(async () => {
    writeFileSync(seedFile, new TextDecoder().decode(user.getSeed()), { mode: 0o600 });
    const conf = join(s.dir, 'nats.conf');
    writeFileSync(conf, `authorization { users = [ { nkey: "${user.getPublicKey()}" } ] }\n`);
    server = await NatsServer.start({ configFile: conf });
  });
  afterAll(async () => {
    await server?.stop();
    s.cleanup();
  });

  it('the host connects with its nkey seed file, and the delivery is applied', async () => {
    const root = join(s.dir, 'root');
    const state = join(s.dir, 'state');
    const config = join(s.dir, 'host.json');
    const keys = join(s.dir, 'keys');
    expect((await runCli('meshctl', ['keygen', '--out', keys])).code).toBe(0);
    const decl = join(s.dir, 'first.json');
    writeFileSync(decl, JSON.stringify({ version: 1, node: 'authed', mode: 'converged', sequence: 1, resources: [] }));
    const bundle = join(s.dir, 'bundle.json');
    expect((await runCli('meshctl', ['bundle', decl, '--key', join(keys, 'operator.nk'), '--server', server.url, '--out', bundle])).code).toBe(0);
    const { mkdirSync } = await import('node:fs');
    mkdirSync(join(root, 'srv'), { recursive: true });
    const flags = ['--root', root, '--state-dir', state, '--config', config];
    expect((await runCli('mesh-host', ['genesis', bundle, '--mode', 'converged', ...flags, '--log-level', 'warn'])).code).toBe(0);
    writeFileSync(config, JSON.stringify({ ...JSON.parse(readFileSync(config, 'utf8')), nkeySeed: seedFile }));

    const nc = await connect({ servers: [server.url], authenticator: nkeyAuthenticator(user.getSeed()) });
    await ensureWire(nc);
    let log = '';
    const daemon = spawn(process.execPath, [join(projectDir, 'bin/mesh-host'), 'run', ...flags], { stdio: ['ignore', 'pipe', 'pipe'] });
    daemon.stdout.on('data', (d: Buffer) => (log += d.toString()));
    try {
      const envelope = await sign(Buffer.from(JSON.stringify({ version: 1, node: 'authed', mode: 'converged', sequence: 2, resources: [{ type: 'directory', id: 'd', path: '/srv/authed' }] })), readFileSync(join(keys, 'operator.nk'), 'utf8'));
      await (await new Kvm(nc).open('mesh_declarations')).put('authed', JSON.stringify(envelope));
      const deadline = Date.now() + 15_000;
      while (!existsSync(join(root, 'srv/authed')) && Date.now() < deadline) await wait(100);
      expect(existsSync(join(root, 'srv/authed')), log).toBe(true);
    } finally {
      daemon.kill('SIGTERM');
      await new Promise((r) => daemon.once('exit', r));
      await nc.close();
    }
  });

  it('without the seed the server refuses the connection', async () => {
    await expect(connect({ servers: [server.url], maxReconnectAttempts: 0, reconnect: false })).rejects.toThrow(/Authorization|authorization|auth/i);
  });
});
