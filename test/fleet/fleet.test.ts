import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { control, enrolledHost, type HostFixture } from '../support/daemon.js';
import { NatsServer, natsUnavailable } from '../support/nats.js';
import { runCli } from '../support/cli.js';
import { ensureWire } from '../../src/link/control.js';
import { DECLARATIONS_BUCKET, heartbeatSubject, reportMessageId, reportSubject } from '../../src/link/wire.js';
import { digestOf, newOperatorKey, sign } from '../../src/core/declaration/envelope.js';
import type { FleetRow } from '../../src/control/fleet/fleet.js';

const unavailable = natsUnavailable();
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await wait(100);
  }
}

/** A host simulated on the wire: its key, its newest report and its heartbeat, published as a daemon would. */
async function simulate(nc: NatsConnection, seed: string, node: string, options: { applied: number; newest: number; outcome?: 'converged' | 'failed'; intervalMs?: number }) {
  const declaration = (sequence: number) => Buffer.from(JSON.stringify({ version: 1, node, mode: 'converged', epoch: 1, sequence, resources: [] }));
  const kv = await new Kvm(nc).open(DECLARATIONS_BUCKET);
  await kv.put(node, JSON.stringify(await sign(declaration(options.newest), seed)));
  const applied = { epoch: 1, sequence: options.applied, digest: digestOf(declaration(options.applied)) };
  const now = new Date().toISOString();
  const report = { node, sequence: 3, trigger: 'delivery', declaration: applied, mode: 'converged', outcome: options.outcome ?? 'converged', steps: [], said: [], facts: { held: [], links: [], filters: [], foundFirewall: null }, startedAt: now, finishedAt: now };
  await jetstream(nc).publish(reportSubject(node), JSON.stringify(report), { msgID: reportMessageId(node, 3) });
  nc.publish(heartbeatSubject(node), JSON.stringify({ node, reportSequence: 3, lastApplied: applied, uptimeSeconds: 10, intervalMs: options.intervalMs ?? 600_000 }));
  await nc.flush();
}

async function fleet(server: NatsServer): Promise<{ code: number | null; rows: FleetRow[]; text: string; stderr: string }> {
  const json = await runCli('meshctl', ['status', '--server', server.url, '--json', '--log-level', 'warn']);
  const text = await runCli('meshctl', ['status', '--server', server.url, '--log-level', 'warn']);
  expect(text.code).toBe(json.code);
  return { code: json.code, rows: (JSON.parse(json.stdout) as { nodes: FleetRow[] }).nodes, text: text.stdout, stderr: json.stderr };
}

describe.skipIf(unavailable !== undefined && !process.env.CI)(`meshctl status: the fleet view, against a real nats-server${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let server: NatsServer;
  let nc: NatsConnection;
  const hosts: HostFixture[] = [];
  beforeAll(async () => {
    server = await NatsServer.start();
    nc = await control([server.url]);
    await ensureWire(nc);
  });
  afterAll(async () => {
    for (const h of hosts) await h.cleanup();
    await nc?.close();
    await server?.stop();
  });

  it('failed and silent first, then behind, then converged; exit 1; the same as --json; all converged and alive is exit 0', async () => {
    const { seed } = await newOperatorKey();
    // Simulated converged hosts, alive: the whole fleet is well, exit 0.
    for (const node of ['sim-a', 'sim-b', 'sim-c']) await simulate(nc, seed, node, { applied: 1, newest: 1 });
    const healthy = await fleet(server);
    expect(healthy.code, healthy.stderr).toBe(0);
    expect(healthy.rows.map((r) => [r.node, r.state])).toEqual([['sim-a', 'converged'], ['sim-b', 'converged'], ['sim-c', 'converged']]);

    // Real daemons: one converged, one whose delivery fails, one killed (silent).
    const start = async (heartbeatMs: number) => {
      const h = await enrolledHost([server.url], { config: { heartbeatMs } });
      hosts.push(h);
      await h.start();
      return h;
    };
    const [good, bad, gone] = [await start(3000), await start(3000), await start(300)];
    await good.put({ epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: 'x=1\n' }] });
    writeFileSync(join(bad.root, 'srv/blocker'), 'a file where a directory is declared\n');
    await bad.put({ epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'file', id: 'conf', path: '/srv/blocker/app.conf', content: 'x=1\n' }] });
    await good.waitForReports(2);
    await bad.waitForReports(2);
    await gone.waitForReports(1);
    // Simulated: one behind (the mesh said 2, it applied 1).
    await simulate(nc, seed, 'sim-behind', { applied: 1, newest: 2 });

    // Every real daemon has beaten once (the stream keeps its last beat); then one of them dies.
    await until('a heartbeat from every real daemon', async () => {
      const { rows } = await fleet(server);
      return [good, bad, gone].every((h) => rows.find((r) => r.node === h.node)?.heartbeat) ? true : undefined;
    });
    await gone.kill();
    const view = await until('the killed host to be silent and the good one converged on sequence 2', async () => {
      const v = await fleet(server);
      const row = (node: string) => v.rows.find((r) => r.node === node);
      return row(gone.node)?.state === 'silent' && row(good.node)?.state === 'converged' && row(good.node)?.lastApplied?.sequence === 2 && row(bad.node)?.state === 'failed' ? v : undefined;
    });

    expect(view.code).toBe(1);
    expect(view.rows.map((r) => [r.node, r.state])).toEqual([
      [bad.node, 'failed'],
      [gone.node, 'silent'],
      ['sim-behind', 'behind'],
      ...[good.node, 'sim-a', 'sim-b', 'sim-c'].sort().map((n) => [n, 'converged']),
    ]);
    const failed = view.rows[0]!;
    expect(failed.lastOutcome).toMatchObject({ trigger: 'delivery' });
    expect(failed.problems.join('\n')).toContain('/srv/blocker/app.conf');
    expect(view.rows[1]!.problems.join('\n')).toMatch(/silent: no heartbeat for \S+ \(it beats every 300ms\)/);
    expect(view.rows[2]).toMatchObject({ behind: true, lastApplied: { epoch: 1, sequence: 1 }, newest: { epoch: 1, sequence: 2 } });
    expect(view.rows.find((r) => r.node === good.node)).toMatchObject({ mode: 'converged', reportSequence: 2, lastApplied: { epoch: 1, sequence: 2 }, newest: { epoch: 1, sequence: 2 }, silent: false, behind: false, problems: [] });

    // The readable view: a count by state, one line a node in the same order, what is wrong under it.
    const lines = view.text.trim().split('\n');
    expect(lines[0]).toBe('7 nodes: 1 failed, 1 silent, 1 behind, 4 converged');
    expect(lines[1]).toMatch(/^NODE\s+LABELS\s+STATE\s+MODE\s+LAST OUTCOME\s+APPLIED\s+NEWEST\s+REPORT\s+TRUST\s+HEARTBEAT$/);
    const order = lines.filter((l) => !l.startsWith(' ')).slice(2).map((l) => l.split(/\s+/)[0]);
    expect(order).toEqual(view.rows.map((r) => r.node));
    expect(view.text).toContain('behind: the mesh said epoch 1, sequence 2, it applied epoch 1, sequence 1');
  }, 240_000);
});
