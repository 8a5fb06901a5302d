import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Report } from '../../src/engine/report/report.js';
import type { HostFixture } from '../support/daemon.js';
import { useMesh } from '../support/mesh.js';
import { NatsServer, natsUnavailable } from '../support/nats.js';
import { hashTree } from '../support/tree.js';
import { newOperatorKey } from '../../src/core/declaration/envelope.js';
import { leaks } from '../support/leaks.js';

const unavailable = natsUnavailable();
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sequences = (reports: Report[]) => reports.map((r) => r.sequence);
async function retry<T>(fn: () => Promise<T>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await wait(250);
    }
  }
}
/** Waits for a condition; a timeout names what was awaited and shows the end of the host's log. */
async function until(done: () => boolean, what: string, h: HostFixture, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the host's log ends:\n${h.log().split('\n').slice(-15).join('\n')}`);
    await wait(50);
  }
}
const strictlyIncreasing = (xs: number[]) => xs.every((x, i) => i === 0 || x > xs[i - 1]!);

describe.skipIf(unavailable !== undefined && !process.env.CI)(`the link, against a real nats-server${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const mesh = useMesh();
  const host = mesh.enrol;

  it('a delivery is applied and reported, after the genesis report, in order, once; status and heartbeat answer', async () => {
    const h = await host({ config: { heartbeatMs: 300 } });
    await h.put({ epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: 'x=1\n' }] });
    const reports = await h.waitForReports(2);
    expect(reports.map((r) => [r.sequence, r.trigger, r.outcome])).toEqual([[1, 'genesis', 'converged'], [2, 'delivery', 'converged']]);
    expect(readFileSync(join(h.root, 'srv/app/app.conf'), 'utf8')).toBe('x=1\n');
    // The kept declaration is exactly the bytes the link delivered.
    expect(JSON.parse(readFileSync(join(h.state, 'declared.json'), 'utf8'))).toHaveProperty('signature');
    // The report leaves the outbox once the mesh acknowledged it, a moment after it is in the stream.
    await until(() => readdirSync(join(h.state, 'outbox')).length === 0, 'the outbox to empty', h);
    const { runCli } = await import('../support/cli.js');
    const status = await runCli('meshctl', ['status', h.node, '--server', mesh.server.url, '--json', '--log-level', 'warn']);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ node: h.node, mode: 'converged', reportSequence: 2, lastApplied: { epoch: 1, sequence: 2 }, kept: { epoch: 1, sequence: 2 } });
    const { connect } = await import('@nats-io/transport-node');
    const nc = await connect({ servers: [mesh.server.url] });
    const beat = await new Promise<{ node: string; reportSequence: number; uptimeSeconds: number }>((resolve) => {
      nc.subscribe(`mesh.heartbeat.${h.node}`, { max: 1, callback: (_e, m) => resolve(JSON.parse(m.string())) });
    });
    await nc.close();
    expect(beat).toMatchObject({ node: h.node, reportSequence: 2, lastApplied: { epoch: 1, sequence: 2 }, kept: { epoch: 1, sequence: 2 } });
    // SIGTERM ends it between applies, with status 0.
    expect(await h.stop()).toBe(0);
    expect(h.log()).toContain('the host ends between applies: the store is quiesced');
  });

  it('a restart reads the kept value again and makes no new delivery of it; the same bytes put again are a new delivery', async () => {
    const h = await host();
    const declaration = { epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }] };
    await h.put(declaration);
    await h.waitForReports(2);
    expect(await h.stop()).toBe(0);
    await h.start();
    await until(() => h.log().includes('the declaration read is the one already kept and applied'), 'the kept value read again', h);
    // Put again (a new revision of the same bytes): the mesh said it again, and hears back. Its report is
    // also the marker for what must not happen: had the restart made a report of the kept value, that one
    // would stand between the first delivery's and this one's.
    const putAt = new Date().toISOString();
    await h.put(declaration);
    await h.waitForReport('of the bytes put again', (r) => r.trigger === 'delivery' && r.startedAt >= putAt);
    const reports = await h.reports();
    expect(reports.map((r) => [r.sequence, r.trigger])).toEqual([[1, 'genesis'], [2, 'delivery'], [3, 'delivery']]);
    expect(reports[2]).toMatchObject({ trigger: 'delivery', outcome: 'converged', declaration: { sequence: 2 }, steps: [], unchanged: { directory: 1 } });
  });

  it('meshctl reports --follow prints the reports already there, then each new one as it is made, and ends on SIGINT', async () => {
    const h = await host();
    await h.waitForReports(1);
    const { spawn } = await import('node:child_process');
    const { projectDir } = await import('../support/cli.js');
    const follower = spawn(process.execPath, [join(projectDir, 'bin/meshctl'), 'reports', '--follow', '--node', h.node, '--server', mesh.server.url, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    follower.stdout.on('data', (d: Buffer) => (out += d.toString()));
    follower.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const lines = () => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Report);
    const deadline = Date.now() + 20_000;
    while (lines().length < 1 && Date.now() < deadline) await wait(50);
    expect(lines().map((r) => r.trigger)).toEqual(['genesis']);
    await h.put({ epoch: 1, sequence: 2, resources: [] });
    await h.waitForReports(2);
    await h.put({ epoch: 1, sequence: 3, resources: [{ type: 'directory', id: 'late', path: '/srv/late' }] });
    while (lines().length < 3 && Date.now() < deadline) await wait(50);
    expect(follower.exitCode, out).toBeNull();
    expect(sequences(lines())).toEqual([1, 2, 3]);
    expect(lines().at(-1)).toMatchObject({ trigger: 'delivery', declaration: { sequence: 3 } });
    follower.kill('SIGINT');
    const code = await new Promise((r) => follower.once('exit', (c, signal) => r(c ?? signal)));
    expect(code).toBe(0);
  });

  it('the reconcile timer repairs drift and reports it, keeps quiet when nothing changed, refuses a kept declaration changed on disk', async () => {
    const h = await host({ config: { reconcileIntervalMs: 400 } });
    await h.put({ epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }] });
    // A reconcile may speak first (the links it reports are new to the mesh): wait for the delivery itself.
    const delivered = await h.waitForReport('of the delivery', (r) => r.trigger === 'delivery' && r.declaration?.sequence === 2);
    rmSync(join(h.root, 'srv/app'), { recursive: true });
    const repaired = await h.waitForReport('of a repair', (r) => r.sequence > delivered.sequence && r.trigger === 'reconcile' && r.steps.some((s) => s.status === 'done'));
    expect(repaired).toMatchObject({ trigger: 'reconcile', outcome: 'converged', steps: [{ resource: 'app', status: 'done' }] });
    expect(existsSync(join(h.root, 'srv/app'))).toBe(true);
    // Several quiet ticks after the repair: nothing to say, no report, no sequence spent.
    const reconciles = (h.log().match(/"trigger":"reconcile"[^\n]*"msg":"apply converged"/g) ?? []).length;
    await h.waitForLog('three more reconciles', /"trigger":"reconcile"[^\n]*"msg":"apply converged"/, reconciles + 3);
    expect((await h.reports()).length).toBe(repaired.sequence);
    const kept = JSON.parse(readFileSync(join(h.state, 'declared.json'), 'utf8'));
    kept.payload = Buffer.from(JSON.stringify({ version: 1, node: h.node, mode: 'converged', epoch: 1, sequence: 2, resources: [] })).toString('base64');
    // Swapped in whole (a write in place could be read half-done by the next tick, and refused for that).
    const { writeFileSync, renameSync } = await import('node:fs');
    writeFileSync(join(h.state, 'declared.json.new'), JSON.stringify(kept));
    renameSync(join(h.state, 'declared.json.new'), join(h.state, 'declared.json'));
    const refused = await h.waitForReport('of the refused kept declaration', (r) => r.sequence > repaired.sequence);
    expect(refused).toMatchObject({ trigger: 'reconcile', outcome: 'refused', error: { message: expect.stringMatching(/the kept declaration: signature refused/) } });
    expect(existsSync(join(h.root, 'srv/app'))).toBe(true);
  });

  it('moves to another bus when the link settings change: a half-written edit is kept out, a renamed-in edit is heard, every watch and stream reopened there', async () => {
    const other = await NatsServer.start();
    try {
      const h = await host();
      await h.waitForReports(1);
      const { control } = await import('../support/daemon.js');
      const { ensureWire } = await import('../../src/link/control.js');
      const nc = await control([other.url]);
      await ensureWire(nc);
      const config = JSON.parse(readFileSync(h.config, 'utf8'));
      const { writeFileSync, renameSync } = await import('node:fs');
      // An edit heard half-written is said and does not move the host, nor end it.
      writeFileSync(h.config, '{"servers": [');
      await until(() => h.log().includes('the configuration was edited but cannot be read'), 'the half-written edit said', h);
      expect(h.log()).not.toContain('moving to the new bus');
      // An editor's save: a new file renamed over the old one.
      writeFileSync(`${h.config}.new`, JSON.stringify({ ...config, servers: [other.url] }));
      renameSync(`${h.config}.new`, h.config);
      await until(() => h.log().includes('moving to the new bus'), 'the move', h);
      await until(() => (h.log().match(/link: connected/g) ?? []).length >= 2, 'connected to the new bus', h);
      const { sign } = await import('../../src/core/declaration/envelope.js');
      const { Kvm } = await import('@nats-io/kv');
      const envelope = await sign(Buffer.from(JSON.stringify({ version: 1, node: h.node, mode: 'converged', epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'moved', path: '/srv/moved' }] })), h.seed);
      await (await new Kvm(nc).open('mesh_declarations')).put(h.node, JSON.stringify(envelope));
      await until(() => existsSync(join(h.root, 'srv/moved')), 'the delivery on the new bus applied', h);
      const { jetstream } = await import('@nats-io/jetstream');
      const consumer = await jetstream(nc).consumers.get('MESH_REPORTS');
      const deadline = Date.now() + 20_000;
      let report: Report | undefined;
      while (!report && Date.now() < deadline) {
        const m = await consumer.next({ expires: 1000 });
        if (m) report = JSON.parse(m.string()) as Report;
      }
      expect(report).toMatchObject({ node: h.node, trigger: 'delivery', declaration: { sequence: 2 } });
      await nc.close();
    } finally {
      await other.stop();
    }
  });

  it('refuses a forged envelope, a stale epoch and a declaration for another node, reports each, touches nothing', async () => {
    const h = await host();
    await h.put({ epoch: 2, sequence: 5, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }] });
    await h.waitForReports(2);
    const before = hashTree(h.root);
    const stranger = await newOperatorKey();
    await h.put({ epoch: 2, sequence: 6, resources: [] }, { seed: stranger.seed });
    await h.waitForReports(3);
    await h.put({ epoch: 1, sequence: 99, resources: [] });
    await h.waitForReports(4);
    // Bytes for another node, put under this node's key.
    const { sign } = await import('../../src/core/declaration/envelope.js');
    const other = await sign(Buffer.from(JSON.stringify({ version: 1, node: 'someone-else', mode: 'converged', epoch: 3, sequence: 1, resources: [] })), h.seed);
    const { Kvm } = await import('@nats-io/kv');
    const { connect } = await import('@nats-io/transport-node');
    const nc = await connect({ servers: [mesh.server.url] });
    await (await new Kvm(nc).open('mesh_declarations')).put(h.node, JSON.stringify(other));
    await nc.close();
    const reports = await h.waitForReports(5);
    const refused = reports.slice(2);
    expect(refused.map((r) => r.outcome)).toEqual(['refused', 'refused', 'refused']);
    expect(refused[0]!.error!.message).toMatch(/signature refused: signed by key O\w+, but the pinned key is O\w+/);
    expect(refused[1]!.error!.message).toMatch(/stale: \(epoch 1, sequence 99\) is older than the last applied \(epoch 2, sequence 5\)/);
    expect(refused[2]!.error!.message).toMatch(/declared for node 'someone-else'/);
    expect(hashTree(h.root)).toEqual(before);
    const state = JSON.parse(readFileSync(join(h.state, 'state.json'), 'utf8'));
    expect(state.refusals).toEqual({ forged: 1, stale: 1, 'wrong-node': 1 });
    expect(strictlyIncreasing(sequences(reports))).toBe(true);
  });

  it('the server killed and restarted in a burst of reports: every report arrives once, in order', async () => {
    // A reconcile every 700 ms: with the server gone, repairing drift makes reports that must wait.
    const h = await host({ config: { reconcileIntervalMs: 700 } });
    for (let i = 2; i <= 6; i++) {
      await h.put({ epoch: 1, sequence: i, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'file', id: 'f', path: '/srv/app/f', content: `${i}\n` }] });
      await wait(120);
    }
    // The last of those applied, so the file to take away is there (a loaded machine applies them later).
    const fileHolds = (content: string) => existsSync(join(h.root, 'srv/app/f')) && readFileSync(join(h.root, 'srv/app/f'), 'utf8') === content;
    await until(() => fileHolds('6\n'), 'the delivery of sequence 6 applied', h, 120_000);
    await mesh.server.kill();
    // Reports made while the server is gone wait in the outbox: a reconcile that repairs drift makes one.
    rmSync(join(h.root, 'srv/app/f'));
    await until(() => readdirSync(join(h.state, 'outbox')).length > 0, 'a report waiting in the outbox', h);
    await mesh.server.run();
    for (let i = 7; i <= 9; i++) {
      // The restarted server recovers its streams first: the control side retries its put.
      await retry(() => h.put({ epoch: 1, sequence: i, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'file', id: 'f', path: '/srv/app/f', content: `${i}\n` }] }));
      await wait(120);
    }
    const state = () => JSON.parse(readFileSync(join(h.state, 'state.json'), 'utf8')) as { reportSequence: number };
    // The bound only ends a run that hangs.
    const deadline = Date.now() + 120_000;
    let reports: Report[] = [];
    while (Date.now() < deadline) {
      reports = await h.reports().catch(() => []);
      // Caught up means the last delivery applied too: its report may be the last to come.
      const applied = fileHolds('9\n');
      if (applied && reports.length >= state().reportSequence && readdirSync(join(h.state, 'outbox')).length === 0) break;
      await wait(200);
    }
    const seqs = sequences(reports);
    expect(seqs).toEqual(Array.from({ length: state().reportSequence }, (_, i) => i + 1));
    expect(readFileSync(join(h.root, 'srv/app/f'), 'utf8')).toBe('9\n');
  });

  it('the host killed between making a report and its acknowledgement: after restart it is sent, once', async () => {
    const h = await host();
    await h.waitForReports(1);
    await mesh.server.kill();
    // With the server gone, a report made now cannot be acknowledged: make one with a CLI reconcile
    // (it takes the lock between the daemon's applies and puts its report in the same outbox).
    const { runCli } = await import('../support/cli.js');
    rmSync(join(h.root, 'srv/app'), { recursive: true });
    const r = await runCli('mesh-host', ['reconcile', ...h.flags, '--log-level', 'warn']);
    expect(r.code, r.stderr).toBe(0);
    // The hand-run report waits in the outbox (the footprint watcher may add its own report of the
    // removal it saw: that one waits behind it, in order).
    expect(readdirSync(join(h.state, 'outbox'))).toContain('000000000002.json');
    await h.kill();
    await mesh.server.run();
    await h.start();
    const made = () => (JSON.parse(readFileSync(join(h.state, 'state.json'), 'utf8')) as { reportSequence: number }).reportSequence;
    const deadline = Date.now() + 30_000;
    let again: Report[] = [];
    while (Date.now() < deadline) {
      again = await h.reports().catch(() => []);
      if (again.length >= made() && readdirSync(join(h.state, 'outbox')).length === 0) break;
      await wait(200);
    }
    // Every report made was acknowledged (the outbox is empty) and the stream holds each once, in order.
    expect(readdirSync(join(h.state, 'outbox'))).toEqual([]);
    expect(sequences(again)).toEqual(Array.from({ length: made() }, (_, i) => i + 1));
    expect(again[1]!.trigger).toBe('reconcile');
    // And the state directory holds nothing the store does not account for.
    expect(leaks({ stateDir: h.state })).toEqual([]);
  });

  it('200 deliveries while one apply runs: at most two further applies, the newest applied last, each delivery seen', async () => {
    const many = Array.from({ length: 8000 }, (_, i) => ({ type: 'file' as const, id: `f${i}`, path: `/srv/app/f${i}`, content: `${i}\n` }));
    const h = await host();
    await h.put({ epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, ...many] });
    // Wait until that big apply has begun, then deliver 200 more while it runs.
    while (!h.log().includes('"sequence":2') || !h.log().includes('delivery kept and enqueued')) await wait(20);
    // One connection keeps the order of its publishes: sent back to back, they are stored in order.
    const puts: Array<Promise<number>> = [];
    for (let i = 3; i <= 202; i++) puts.push(h.put({ epoch: 1, sequence: i, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'file', id: 'last', path: '/srv/app/last', content: `${i}\n` }] }));
    const revisions = await Promise.all(puts);
    expect(strictlyIncreasing(revisions)).toBe(true);
    // An 8,000-file apply on a loaded machine takes minutes: the bound only ends a run that hangs.
    const deadline = Date.now() + 240_000;
    let reports: Report[] = [];
    while (Date.now() < deadline) {
      reports = await h.reports();
      if (reports.at(-1)?.declaration?.sequence === 202) break;
      await wait(200);
    }
    const deliveries = reports.filter((r) => r.trigger === 'delivery');
    expect(deliveries[0]!.declaration!.sequence).toBe(2);
    const after = deliveries.slice(1);
    expect(after.length).toBeGreaterThanOrEqual(1);
    expect(after.length).toBeLessThanOrEqual(2);
    expect(after.at(-1)!.declaration!.sequence).toBe(202);
    expect(readFileSync(join(h.root, 'srv/app/last'), 'utf8')).toBe('202\n');
    expect(existsSync(join(h.root, 'srv/app/f0'))).toBe(false);
    // Every delivery the watch brought was checked and kept (or superseded in the one pending slot).
    const seen = new Set([...h.log().matchAll(/"sequence":(\d+)[^\n]*delivery kept and enqueued/g)].map((m) => Number(m[1])));
    expect(Math.max(...seen)).toBe(202);
    expect(strictlyIncreasing(sequences(reports))).toBe(true);
  }, 300_000);
});
