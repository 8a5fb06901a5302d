import { afterEach, describe, expect, it } from 'vitest';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import { newOperatorKey, sign } from '../../src/core/declaration/envelope.js';
import { DECLARATIONS_BUCKET } from '../../src/link/wire.js';
import { projectDir, runCli } from '../support/cli.js';
import { control, reportsOf } from '../support/daemon.js';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';
import { hashTree, scratchFolders } from '../support/tree.js';

const unavailable = natsUnavailable();
const folder = scratchFolders(afterEach);
let nodes = 0;

/** Waits on a condition checked as the event it watches comes; the timeout names what was awaited and shows the log. */
async function until(check: () => boolean | Promise<boolean>, what: string, log: () => string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the log ends:\n${log().split('\n').slice(-20).join('\n')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A scratch machine never enrolled: a root with something of its own, no state, no configuration. */
async function unenrolled(server: string) {
  const dir = folder();
  const node = `run-bundle-${process.pid}-${++nodes}`;
  const root = join(dir, 'root');
  mkdirSync(join(root, 'srv'), { recursive: true });
  writeFileSync(join(root, 'srv/found.txt'), 'found here\n');
  const state = join(dir, 'state');
  const config = join(dir, 'etc/host.json');
  const keys = join(dir, 'keys');
  expect((await runCli('meshctl', ['keygen', '--out', keys])).code).toBe(0);
  const seed = readFileSync(join(keys, 'operator.nk'), 'utf8').trim();
  const decl = join(dir, 'first.json');
  writeFileSync(decl, JSON.stringify({ version: 1, node, mode: 'converged', epoch: 1, sequence: 1, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: 'first\n' }] }));
  const bundle = join(dir, 'bundle.json');
  const made = await runCli('meshctl', ['bundle', decl, '--key', join(keys, 'operator.nk'), '--server', server, '--out', bundle]);
  expect(made.code, made.stderr).toBe(0);
  let proc: ChildProcess | undefined;
  let log = '';
  return {
    dir, node, root, state, config, seed, bundle,
    log: () => log,
    run(bundlePath: string, mode = 'converged') {
      log = '';
      proc = spawn(process.execPath, [join(projectDir, 'bin/mesh-host'), 'run', '--bundle', bundlePath, '--mode', mode, '--root', root, '--state-dir', state, '--config', config, '--log-level', 'debug'], { stdio: ['ignore', 'pipe', 'pipe'] });
      proc.stdout!.on('data', (d: Buffer) => (log += d.toString()));
      proc.stderr!.on('data', (d: Buffer) => (log += d.toString()));
      return proc;
    },
    async stop(): Promise<number | null> {
      const p = proc;
      if (!p || p.exitCode !== null || p.signalCode !== null) return p?.exitCode ?? null;
      p.kill('SIGTERM');
      return new Promise((resolve) => p.once('exit', (code) => resolve(code)));
    },
  };
}

describe.skipIf(unavailable !== undefined && !process.env.CI)(`mesh-host run --bundle on a machine never enrolled, against a real nats-server${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const mesh = useMesh();

  it('enrols through the one genesis path, applies the bundle, serves, and its first report reaches the mesh; a delivery follows', async () => {
    const m = await unenrolled(mesh.server.url);
    const nc = await control([mesh.server.url]);
    try {
      const daemon = m.run(m.bundle);
      try {
        await until(async () => (await reportsOf(nc, m.node)).length >= 1, 'the first report in the stream', m.log);
        const [first] = await reportsOf(nc, m.node);
        expect(first).toMatchObject({ node: m.node, sequence: 1, trigger: 'genesis', outcome: 'converged', declaration: { epoch: 1, sequence: 1 } });
        expect(m.log()).toContain('enrolled with the bundle given');
        expect(readFileSync(join(m.root, 'srv/app/app.conf'), 'utf8')).toBe('first\n');
        // Enrolled as `mesh-host genesis` enrols: the configuration written from the bundle, the bundle consumed.
        expect(JSON.parse(readFileSync(m.config, 'utf8'))).toMatchObject({ node: m.node, servers: [mesh.server.url] });
        expect(JSON.parse(readFileSync(join(m.state, 'state.json'), 'utf8'))).toMatchObject({ mode: 'converged', genesisDigest: first!.declaration!.digest });
        // It serves: a delivery is applied and reported after the genesis report.
        const envelope = await sign(Buffer.from(JSON.stringify({ version: 1, node: m.node, mode: 'converged', epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: 'second\n' }] })), m.seed);
        await (await new Kvm(nc).open(DECLARATIONS_BUCKET)).put(m.node, JSON.stringify(envelope));
        await until(async () => (await reportsOf(nc, m.node)).length >= 2, 'the delivery reported', m.log);
        expect((await reportsOf(nc, m.node)).map((r) => [r.sequence, r.trigger, r.outcome])).toEqual([[1, 'genesis', 'converged'], [2, 'delivery', 'converged']]);
        expect(readFileSync(join(m.root, 'srv/app/app.conf'), 'utf8')).toBe('second\n');
      } finally {
        expect(await m.stop()).toBe(0);
      }
      expect(daemon.exitCode).toBe(0);
      // Started again with the same unit line, it is enrolled already: no second genesis, no new report.
      m.run(m.bundle);
      await until(() => m.log().includes('link: connected'), 'connected again', m.log);
      expect(m.log()).not.toContain('enrolled with the bundle given');
      expect(await m.stop()).toBe(0);
      expect((await reportsOf(nc, m.node)).length).toBe(2);
    } finally {
      await nc.close();
    }
  }, 180_000);

  it('a genesis whose apply failed is tried again when the daemon starts, once its fault is put right', async () => {
    const m = await unenrolled(mesh.server.url);
    const nc = await control([mesh.server.url]);
    // The directory the bundle writes into cannot be written (immutable): the plan passes, the apply fails.
    const app = join(m.root, 'srv/app');
    mkdirSync(app);
    execFileSync('chattr', ['+i', app]);
    try {
      m.run(m.bundle);
      await until(async () => (await reportsOf(nc, m.node)).length >= 1, 'the genesis report', m.log);
      expect((await reportsOf(nc, m.node))[0]).toMatchObject({ trigger: 'genesis', outcome: 'failed' });
      expect(await m.stop()).toBe(0);
      // Put right by hand; started again, the host tries the failed apply at once (not at the next tick, minutes later).
      execFileSync('chattr', ['-i', app]);
      m.run(m.bundle);
      await until(async () => (await reportsOf(nc, m.node)).length >= 2, 'the failed apply tried again', m.log);
      const reports = await reportsOf(nc, m.node);
      expect(reports.map((r) => [r.sequence, r.trigger, r.outcome]), JSON.stringify(reports[1])).toEqual([[1, 'genesis', 'failed'], [2, 'reconcile', 'converged']]);
      expect(reports[1]!.said.join('\n')).toMatch(/the last apply \(report 1\) failed.*; it is tried again as the host starts/);
      expect(readFileSync(join(app, 'app.conf'), 'utf8')).toBe('first\n');
      expect(await m.stop()).toBe(0);
    } finally {
      execFileSync('chattr', ['-i', app]);
      await m.stop();
      await nc.close();
    }
  }, 180_000);

  it('a bad bundle is refused with a clear error and nothing is touched; the host waits unenrolled until a genesis by hand', async () => {
    const m = await unenrolled(mesh.server.url);
    const nc = await control([mesh.server.url]);
    try {
      const root = hashTree(m.root);
      // Signed by a key the bundle does not pin: the signature is refused, named.
      const good = JSON.parse(readFileSync(m.bundle, 'utf8')) as { declaration: unknown; publicKey: string };
      const stranger = await newOperatorKey();
      const forged = join(m.dir, 'forged.json');
      writeFileSync(forged, JSON.stringify({ ...good, declaration: await sign(Buffer.from(JSON.stringify({ version: 1, node: m.node, mode: 'converged', epoch: 1, sequence: 1, resources: [{ type: 'directory', id: 'evil', path: '/srv/evil' }] })), stranger.seed) }));
      m.run(forged);
      await until(() => m.log().includes(`genesis with ${forged} failed`), 'the refusal', m.log);
      expect(m.log()).toMatch(/signature refused: signed by key O\w+, but the pinned key is O\w+/);
      expect(hashTree(m.root)).toEqual(root);
      expect(existsSync(m.config)).toBe(false);
      expect(existsSync(join(m.state, 'state.json'))).toBe(false);
      // A genesis run by hand with the good bundle while it waits: the daemon sees it, serves, and reports.
      const g = await runCli('mesh-host', ['genesis', m.bundle, '--mode', 'converged', '--root', m.root, '--state-dir', m.state, '--config', m.config, '--log-level', 'warn']);
      expect(g.code, g.stderr).toBe(0);
      await until(() => m.log().includes('link: connected'), 'the daemon serving after the genesis by hand', m.log);
      await until(async () => (await reportsOf(nc, m.node)).length >= 1, 'the genesis report in the stream', m.log);
      expect((await reportsOf(nc, m.node)).map((r) => r.trigger)).toEqual(['genesis']);
      expect(existsSync(join(m.root, 'srv/evil'))).toBe(false);
      expect(await m.stop()).toBe(0);
      // Bytes that are not a bundle at all, and a usage mistake: refused before anything starts.
      const notJson = join(m.dir, 'not.json');
      writeFileSync(notJson, '{"version": 1,');
      const fresh = await unenrolled(mesh.server.url);
      const before = hashTree(fresh.root);
      fresh.run(notJson);
      await until(() => fresh.log().includes(`genesis with ${notJson} failed`), 'the refusal of bytes that are not JSON', fresh.log);
      expect(fresh.log()).toContain('not JSON');
      expect(hashTree(fresh.root)).toEqual(before);
      expect(existsSync(fresh.config)).toBe(false);
      expect(await fresh.stop()).toBe(0);
      const usage = await runCli('mesh-host', ['run', '--bundle', m.bundle, '--root', fresh.root, '--state-dir', fresh.state, '--config', fresh.config]);
      expect(usage.code).toBe(2);
      expect(usage.stderr).toContain("'run --bundle' needs --mode adopted or --mode converged");
    } finally {
      await nc.close();
    }
  }, 180_000);
});
