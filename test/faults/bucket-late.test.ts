import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import { sign } from '../../src/core/declaration/envelope.js';
import { ensureWire } from '../../src/link/control.js';
import { DECLARATIONS_BUCKET } from '../../src/link/wire.js';
import { projectDir, runCli } from '../support/cli.js';
import { control, reportsOf } from '../support/daemon.js';
import { NatsServer, natsUnavailable } from '../support/nats.js';
import { scratchFolders } from '../support/tree.js';

const unavailable = natsUnavailable();
const folder = scratchFolders(afterEach);

/** Waits on a condition checked as the event it watches comes; the timeout names what was awaited and shows the log. */
async function until(check: () => boolean | Promise<boolean>, what: string, log: () => string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the log ends:\n${log().split('\n').slice(-20).join('\n')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The messages of the daemon's log lines. */
const messages = (log: string) => log.split('\n').filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { msg: string }).msg);

describe.skipIf(unavailable !== undefined && !process.env.CI)(`a host enrolled offline, started before the mesh's buckets exist${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await NatsServer.start();
  });
  afterAll(async () => server?.stop());

  it('hears the first put itself and applies it without waiting out a back-off', async () => {
    const dir = folder();
    const node = `late-bucket-${process.pid}`;
    const root = join(dir, 'root');
    mkdirSync(join(root, 'srv'), { recursive: true });
    const state = join(dir, 'state');
    const config = join(dir, 'host.json');
    const keys = join(dir, 'keys');
    expect((await runCli('meshctl', ['keygen', '--out', keys])).code).toBe(0);
    const seed = readFileSync(join(keys, 'operator.nk'), 'utf8').trim();
    const decl = join(dir, 'first.json');
    writeFileSync(decl, JSON.stringify({ version: 1, node, mode: 'converged', epoch: 1, sequence: 1, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }] }));
    const bundle = join(dir, 'bundle.json');
    const made = await runCli('meshctl', ['bundle', decl, '--key', join(keys, 'operator.nk'), '--server', server.url, '--offline', '--out', bundle]);
    expect(made.code, made.stderr).toBe(0);
    const flags = ['--root', root, '--state-dir', state, '--config', config];
    const g = await runCli('mesh-host', ['genesis', bundle, '--mode', 'converged', ...flags, '--log-level', 'warn']);
    expect(g.code, g.stderr).toBe(0);
    writeFileSync(config, JSON.stringify({ ...JSON.parse(readFileSync(config, 'utf8')), reconcileIntervalMs: 3_600_000 }));

    let log = '';
    const proc: ChildProcess = spawn(process.execPath, [join(projectDir, 'bin/mesh-host'), 'run', ...flags, '--log-level', 'debug'], { stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout!.on('data', (d: Buffer) => (log += d.toString()));
    proc.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    const nc = await control([server.url]);
    try {
      await until(() => log.includes('is not there yet'), 'the host waiting for the bucket', () => log);
      // The host's read of the bucket not yet made hangs until its request times out, seconds later: the put must cut it short.
      await ensureWire(nc);
      const envelope = await sign(Buffer.from(JSON.stringify({ version: 1, node, mode: 'converged', epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'directory', id: 'more', path: '/srv/more' }] })), seed);
      await (await new Kvm(nc).open(DECLARATIONS_BUCKET)).put(node, JSON.stringify(envelope));
      await until(() => log.includes('link: delivery kept'), 'the delivery kept', () => log);
      await until(async () => (await reportsOf(nc, node)).some((r) => r.trigger === 'delivery'), 'the delivery reported', () => log);
      expect(messages(log)).toContain('link: the declarations bucket appeared (a put was heard on this node\'s key); reading it now');
    } finally {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      await nc.close();
    }
  }, 120_000);
});
