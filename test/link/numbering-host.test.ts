import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, type InitHost, type InitMesh } from '../support/mesh-init.js';
import { reportsOf } from '../support/daemon.js';
import { runCli } from '../support/cli.js';
import { DECLARATIONS_BUCKET, heartbeatSubject, REPORTS_STREAM, reportSubject } from '../../src/link/wire.js';
import type { Report } from '../../src/engine/report/report.js';
import type { Order } from '../../src/core/declaration/order.js';

const unavailable = natsUnavailable();

type Beat = { lastApplied: Order | null; kept?: Order | null };

describe.skipIf(unavailable !== undefined && !process.env.CI)(`meshctl send numbers after what the host holds, not only what the mesh still holds${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let mesh: InitMesh;
  let control: NatsConnection;
  const file = (name: string, node?: string) => {
    const path = join(mesh.dir, '..', `${name}.json`);
    writeFileSync(path, JSON.stringify({ version: 1, ...(node ? { node } : {}), mode: 'converged', resources: [{ type: 'directory', id: name, path: `/srv/${name}` }] }));
    return path;
  };
  /** The node's key and its reports, gone from the mesh (a purge, a server's store rebuilt): the host keeps what it applied. */
  async function forget(node: string, { reports }: { reports: boolean }) {
    await (await new Kvm(control).open(DECLARATIONS_BUCKET)).purge(node);
    if (reports) await (await jetstreamManager(control)).streams.purge(REPORTS_STREAM, { filter: reportSubject(node) });
  }
  /** Resolves on the node's first heartbeat, after the call, that matches. */
  function beat(node: string, match: (b: Beat) => boolean, timeoutMs = 30_000): Promise<Beat> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => (sub.unsubscribe(), reject(new Error(`no heartbeat of ${node} matched within ${timeoutMs} ms`))), timeoutMs);
      const sub = control.subscribe(heartbeatSubject(node), {
        callback: (_e, m) => {
          const b = JSON.parse(m.string()) as Beat;
          if (!match(b)) return;
          clearTimeout(timer);
          sub.unsubscribe();
          resolve(b);
        },
      });
    });
  }
  async function report(node: string, what: string, match: (r: Report) => boolean, timeoutMs = 30_000): Promise<Report> {
    for (const started = Date.now(); ; await new Promise((r) => setTimeout(r, 100))) {
      const found = (await reportsOf(control, node)).find(match);
      if (found) return found;
      if (Date.now() - started > timeoutMs) throw new Error(`${node}: no report ${what}: ${JSON.stringify(await reportsOf(control, node))}`);
    }
  }
  async function untilLog(host: InitHost, what: string, pattern: RegExp, count: number, timeoutMs = 30_000): Promise<void> {
    for (const started = Date.now(); (host.log().match(new RegExp(pattern.source, 'g')) ?? []).length < count; await new Promise((r) => setTimeout(r, 100))) {
      if (Date.now() - started > timeoutMs) throw new Error(`${host.node}: no ${what} in its log:\n${host.log().slice(-3000)}`);
    }
  }

  beforeAll(async () => {
    mesh = await initMesh();
    control = await mesh.control();
  }, 120_000);
  afterAll(async () => {
    await mesh?.close();
  });

  it("the key purged and the node's reports gone: the next send is numbered after what the host's heartbeat says it applied, and the host applies it", async () => {
    const host = await mesh.enrol('lost-1');
    for (const name of ['a', 'b', 'c']) expect((await mesh.meshctl(['send', 'lost-1', file(name, 'lost-1')])).code).toBe(0);
    const applied = (await report('lost-1', 'of the third send', (r) => r.trigger === 'delivery' && r.outcome === 'converged' && r.declaration?.sequence === 4)).declaration!;
    await beat('lost-1', (b) => b.lastApplied?.sequence === applied.sequence);
    await forget('lost-1', { reports: true });

    const sent = await mesh.meshctl(['send', 'lost-1', file('after-purge', 'lost-1'), '--json']);
    expect(sent.code, sent.stderr).toBe(0);
    const numbered = JSON.parse(sent.stdout) as Order;
    expect([numbered.epoch, numbered.sequence]).toEqual([applied.epoch, applied.sequence + 1]);
    const next = await report('lost-1', 'of the send after the purge', (r) => r.declaration?.sequence === applied.sequence + 1 || r.outcome === 'refused');
    expect(next, JSON.stringify(next.error)).toMatchObject({ trigger: 'delivery', outcome: 'converged' });
    await host.stop();
  }, 120_000);

  it('a paused host holding a declaration newer than it applied, its key purged: a send to many numbers after the kept one, and the host keeps it and applies it on resume', async () => {
    const host = await mesh.enrol('lost-2');
    await report('lost-2', 'of genesis', (r) => r.trigger === 'genesis');
    const pause = await runCli('mesh-host', ['pause', '--reason', 'numbering test', ...host.flags, '--log-level', 'warn']);
    expect(pause.code, pause.stderr).toBe(0);
    await untilLog(host, 'the pause heard', /the host is paused/, 1);
    expect((await mesh.meshctl(['send', 'lost-2', file('kept', 'lost-2')])).code).toBe(0);
    await untilLog(host, 'the delivery kept', /delivery kept and enqueued/, 1);
    const held = await beat('lost-2', (b) => b.kept?.sequence === 2);
    expect(held.lastApplied?.sequence).toBe(1);
    await forget('lost-2', { reports: false });

    const sent = await mesh.meshctl(['send', file('after-purge-2'), '--nodes', 'lost-2', '--json']);
    expect(sent.code, sent.stderr).toBe(0);
    expect(JSON.parse(sent.stdout)).toMatchObject({ node: 'lost-2', outcome: 'sent', mark: { sequence: 3 } });
    await untilLog(host, 'the new delivery kept', /delivery kept and enqueued/, 2);
    const resume = await runCli('mesh-host', ['resume', ...host.flags, '--log-level', 'warn']);
    expect(resume.code, resume.stderr).toBe(0);
    const applied = await report('lost-2', 'after the resume', (r) => r.trigger === 'delivery');
    expect(applied).toMatchObject({ outcome: 'converged', declaration: { sequence: 3 } });
    expect((await reportsOf(control, 'lost-2')).filter((r) => r.outcome === 'refused')).toEqual([]);
    await host.stop();
  }, 120_000);

  it("an old value put back into the node's key (a replay, a restore): the next send numbers after the newest the key's history holds", async () => {
    // No daemon: no report and no heartbeat say what the host holds; the key's history is all there is.
    await mesh.enrol('replayed', { start: false });
    for (const name of ['r1', 'r2']) expect((await mesh.meshctl(['send', 'replayed', file(name, 'replayed')])).code).toBe(0);
    const kv = await new Kvm(control).open(DECLARATIONS_BUCKET);
    const history: Array<{ revision: number; value: Uint8Array }> = [];
    for await (const e of await kv.history({ key: 'replayed' })) history.push({ revision: e.revision, value: e.value });
    const sequenceOf = (v: Uint8Array) => (JSON.parse(Buffer.from((JSON.parse(Buffer.from(v).toString()) as { payload: string }).payload, 'base64').toString()) as Order).sequence;
    expect(history.map((h) => sequenceOf(h.value))).toEqual([1, 2, 3]);
    await kv.put('replayed', history[0]!.value);

    const sent = await mesh.meshctl(['send', 'replayed', file('after-replay', 'replayed'), '--json']);
    expect(sent.code, sent.stderr).toBe(0);
    expect((JSON.parse(sent.stdout) as Order).sequence).toBe(4);
  }, 120_000);
});
