import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { DECLARATIONS_BUCKET } from '../../src/link/wire.js';
import type { FleetRow } from '../../src/control/fleet/fleet.js';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, type InitHost, type InitMesh } from '../support/mesh-init.js';

/**
 * The rough edges an operator met, each on a real mesh made by `meshctl init` with a real host: what
 * the command does at that edge now, where it used to give a stack trace, a wait or a wrong word.
 */
const unavailable = natsUnavailable();

/** No stack trace and no "unexpected failure": one clear refusal. */
function clearRefusal(stderr: string): void {
  expect(stderr).not.toMatch(/unexpected failure|^\s+at /m);
}

/** Waits on the fleet itself until `done` holds for the node's row (a bound that only ends a hang). */
async function rowWhen(mesh: InitMesh, node: string, done: (row: FleetRow | undefined) => boolean): Promise<FleetRow | undefined> {
  let row: FleetRow | undefined;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
    const run = await mesh.meshctl(['status', '--json', '--log-level', 'warn']);
    row = (JSON.parse(run.stdout) as { nodes: FleetRow[] }).nodes.find((r) => r.node === node);
    if (done(row)) return row;
  }
  return row;
}

describe.skipIf(unavailable !== undefined && !process.env.CI)(`an operator's edges on a mesh made by meshctl init${unavailable ? ` (cannot run: ${unavailable})` : ''}`, { timeout: 180_000 }, () => {
  let mesh: InitMesh;
  let host: InitHost;
  let control: NatsConnection;
  let big: string;

  beforeAll(async () => {
    mesh = await initMesh();
    // Its timer's beat is an hour away: the beat the fleet sees is the one at connect.
    host = await mesh.enrol('web-1', { labels: ['role=web'], config: { heartbeatMs: 3_600_000 } });
    control = await mesh.control();
    big = join(mesh.dir, '..', 'big.json');
    writeFileSync(big, JSON.stringify({ version: 1, mode: 'converged', resources: [{ type: 'file', id: 'big', path: '/srv/big', content: 'x'.repeat(3 * 1024 * 1024) }] }));
  }, 180_000);
  afterAll(async () => {
    await mesh?.close();
  });

  const keyRevision = async () => (await (await new Kvm(control).open(DECLARATIONS_BUCKET)).get('web-1'))?.revision;

  it('a connected host is heard at once: its first heartbeat comes at connect, not up to an interval later', async () => {
    const row = await rowWhen(mesh, 'web-1', (r) => r?.heartbeat !== null && r?.heartbeat !== undefined);
    expect(row?.heartbeat).not.toBeNull();
  });

  it('meshctl rollout of a declaration over the servers\' payload limit: the clear refusal send gives, exit 3, nothing written', async () => {
    const before = await keyRevision();
    const streams = async () => (await (await jetstreamManager(control)).streams.names().next()).sort();
    const streamsBefore = await streams();
    const run = await mesh.meshctl(['rollout', big, '--all', '--log-level', 'warn'], { timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(3);
    clearRefusal(run.stderr);
    expect(run.stderr).toMatch(/bytes signed and encoded; the server takes at most \d+ bytes a message .*nothing was sent/);
    expect(await keyRevision()).toBe(before);
    const rollouts = await new Kvm(control).open('mesh_rollouts').catch(() => undefined);
    const keys: string[] = [];
    if (rollouts) for await (const k of await rollouts.keys()) keys.push(k);
    expect(keys.filter((k) => !k.startsWith('_'))).toEqual([]);
    expect((await streams()).filter((s) => !streamsBefore.includes(s) && s !== 'KV_mesh_rollouts')).toEqual([]);
  });

  it('meshctl plan of the same: refused up front naming the size, not a node that "did not answer"', async () => {
    const run = await mesh.meshctl(['plan', big, '--all', '--log-level', 'warn'], { timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(3);
    clearRefusal(run.stderr);
    expect(run.stderr).toMatch(/big\.json, each node's copy signed, is \d+ bytes signed and encoded.*nothing was asked/);
    expect(run.stdout).not.toContain('did not answer');
  });

  it('meshctl serve on a taken address: one line naming it, exit 3', async () => {
    const taken: Server = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as { port: number }).port;
    try {
      const run = await mesh.meshctl(['serve', '--listen', `127.0.0.1:${port}`, '--log-level', 'warn']);
      expect(run.code, run.stderr).toBe(3);
      expect(run.stderr.trim()).toBe(`meshctl: 127.0.0.1:${port} is in use: another program listens there (--listen HOST:PORT picks another)`);
    } finally {
      taken.close();
    }
  });

  it("meshctl status with a host's credentials: refused at once, saying they may not read the fleet", async () => {
    const run = await mesh.meshctl(['status', '--creds', join(host.root, '..', 'node.creds'), '--log-level', 'warn'], { timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(3);
    clearRefusal(run.stderr);
    expect(run.stderr).toContain('these credentials may not read the fleet');
    expect(run.stderr).not.toContain('did not become ready');
  });

  it('a node with a pinned key and no report yet is listed as waiting', async () => {
    const key = await mesh.meshctl(['node-key', 'db-9', '--out', join(mesh.dir, '..', 'db-9.nk')]);
    expect(key.code, key.stderr).toBe(0);
    const row = await rowWhen(mesh, 'db-9', (r) => r !== undefined);
    expect(row).toMatchObject({ node: 'db-9', state: 'waiting', silent: false });
    expect(row!.problems.join('; ')).toContain('no report yet');
    const table = await mesh.meshctl(['status', '--log-level', 'warn']);
    expect(table.stdout).toMatch(/^db-9 +- +waiting /m);
  });

  it('after a refusal, the fleet says what the node still applied, as the host itself does', async () => {
    const good = join(mesh.dir, '..', 'good.json');
    writeFileSync(good, JSON.stringify({ version: 1, node: 'web-1', mode: 'converged', resources: [{ type: 'directory', id: 'app', path: '/srv/app' }] }));
    expect((await mesh.meshctl(['send', 'web-1', good])).code).toBe(0);
    const converged = await rowWhen(mesh, 'web-1', (r) => r?.lastOutcome?.trigger === 'delivery' && r.lastOutcome.outcome === 'converged');
    const applied = converged!.lastApplied!.sequence;
    // An owner no account of the host has: meshctl cannot know, the host refuses the plan (unappliable).
    const refusedFile = join(mesh.dir, '..', 'unknown-owner.json');
    writeFileSync(refusedFile, JSON.stringify({ version: 1, node: 'web-1', mode: 'converged', resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'file', id: 'f', path: '/srv/app/f', content: 'x', owner: 'mesh-host-no-such-user' }] }));
    expect((await mesh.meshctl(['send', 'web-1', refusedFile])).code).toBe(0);
    const row = await rowWhen(mesh, 'web-1', (r) => r?.lastOutcome?.outcome === 'refused');
    const asked = JSON.parse((await mesh.meshctl(['status', 'web-1', '--json', '--log-level', 'warn'])).stdout) as { lastApplied: { sequence: number } };
    expect(asked.lastApplied.sequence).toBe(applied);
    expect(row!.lastApplied?.sequence).toBe(applied);
    expect(row!.problems.join('; ')).toContain(`it applied sequence ${applied}`);
  });
});

describe.skipIf(unavailable !== undefined && !process.env.CI)(`meshctl bundle on a new mesh${unavailable ? ` (cannot run: ${unavailable})` : ''}`, { timeout: 120_000 }, () => {
  let mesh: InitMesh;
  let control: NatsConnection;
  beforeAll(async () => {
    mesh = await initMesh();
    control = await mesh.control();
  }, 120_000);
  afterAll(async () => {
    await mesh?.close();
  });
  const streams = async () => (await (await jetstreamManager(control)).streams.names().next()).sort();

  it('a declaration no host would take is refused before any bucket or stream is made in the mesh', async () => {
    const bad = join(mesh.dir, '..', 'bad.json');
    writeFileSync(bad, JSON.stringify({ version: 1, node: 'web-1', mode: 'converged', resources: [{ type: 'file', id: 'x', path: 'relative/path' }] }));
    const run = await mesh.meshctl(['bundle', bad, '--log-level', 'warn']);
    expect(run.code, run.stderr).toBe(3);
    expect(await streams()).toEqual([]);
  });

  it('--node names the node of a file that names none; a file naming another node is refused', async () => {
    const plain = join(mesh.dir, '..', 'plain.json');
    writeFileSync(plain, JSON.stringify({ version: 1, mode: 'converged', resources: [] }));
    const out = join(mesh.dir, '..', 'web-2.bundle.json');
    const run = await mesh.meshctl(['bundle', plain, '--node', 'web-2', '--out', out, '--log-level', 'warn']);
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(readFileSync(out, 'utf8')) as { node: string }).node).toBe('web-2');
    const named = join(mesh.dir, '..', 'named.json');
    writeFileSync(named, JSON.stringify({ version: 1, node: 'web-3', mode: 'converged', resources: [] }));
    const other = await mesh.meshctl(['bundle', named, '--node', 'web-4', '--log-level', 'warn']);
    expect(other.code).toBe(3);
    expect(other.stderr).toContain('names the node "web-3", not web-4 (--node)');
  });

  it("its help says --out takes a file", async () => {
    const run = await mesh.meshctl(['bundle', '--help']);
    expect(run.stdout).toMatch(/--out PATH +where to write: a file/);
  });
});
