import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, type InitHost, type InitMesh } from '../support/mesh-init.js';
import { DECLARATIONS_BUCKET, ENROLMENTS_BUCKET } from '../../src/link/wire.js';

const unavailable = natsUnavailable();

/** Waits for a file on a host's scratch root, the host's log in the failure. */
async function until(host: InitHost, path: string, timeoutMs = 30_000): Promise<void> {
  const started = Date.now();
  while (!existsSync(join(host.root, path))) {
    if (Date.now() - started > timeoutMs) throw new Error(`${host.node} did not apply ${path}:\n${host.log().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Row {
  node: string;
  labels: Record<string, string>;
}

describe.skipIf(unavailable !== undefined && !process.env.CI)(`labels and one send to many, on nats-servers in operator mode made by meshctl init${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  describe.each([1, 3])('%i server(s)', (count) => {
    let mesh: InitMesh;
    let control: NatsConnection;
    let hosts: Record<string, InitHost>;
    const file = (name: string, declaration: object) => {
      const path = join(mesh.dir, '..', `${name}.json`);
      writeFileSync(path, JSON.stringify(declaration));
      return path;
    };
    /** Every key's revision and value, and every enrolment: what the control side keeps. */
    async function kept(): Promise<Record<string, unknown>> {
      const out: Record<string, unknown> = {};
      for (const bucket of [DECLARATIONS_BUCKET, ENROLMENTS_BUCKET]) {
        const kv = await new Kvm(control).open(bucket);
        for await (const key of await kv.keys()) {
          const e = await kv.get(key);
          out[`${bucket}/${key}`] = e && { revision: e.revision, value: e.string() };
        }
      }
      return out;
    }

    beforeAll(async () => {
      mesh = await initMesh({ servers: count });
      control = await mesh.control();
      hosts = {};
      for (const [node, labels] of [['web-1', ['role=web', 'site=a']], ['web-2', ['role=web', 'site=b']], ['db-1', ['role=db']]] as const) hosts[node] = await mesh.enrol(node, { labels: [...labels] });
    }, 180_000);
    afterAll(async () => {
      await mesh?.close();
    });

    it('node-key --label records the labels; label sets and removes them; status --select shows the nodes that match, and refuses a selector that matches nothing', async () => {
      const relabel = await mesh.meshctl(['label', 'db-1', 'tier=1', 'site=c', 'site-']);
      expect(relabel.code, relabel.stderr).toBe(0);
      expect(relabel.stdout.trim()).toBe('db-1: role=db, tier=1');
      const view = await mesh.meshctl(['status', '--select', 'role=web', '--json']);
      const rows = (JSON.parse(view.stdout) as { nodes: Row[] }).nodes;
      expect(rows.map((r) => [r.node, r.labels]).sort()).toEqual([['web-1', { role: 'web', site: 'a' }], ['web-2', { role: 'web', site: 'b' }]]);
      const notB = await mesh.meshctl(['status', '--select', 'role=web,site!=b', '--json']);
      expect((JSON.parse(notB.stdout) as { nodes: Row[] }).nodes.map((r) => r.node)).toEqual(['web-1']);
      const none = await mesh.meshctl(['status', '--select', 'role=cache']);
      expect(none.code).toBe(3);
      expect(none.stderr).toMatch(/no node's labels match role=cache: nothing to show/);
      expect(none.stderr).toMatch(/role=web \(2\)/);
      const bad = await mesh.meshctl(['label', 'db-1', 'role']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/'role' is not a label: write key=value/);
      const ghost = await mesh.meshctl(['label', 'ghost', 'role=web']);
      expect(ghost.code).toBe(3);
      expect(ghost.stderr).toMatch(/ghost has no key in the mesh/);
    });

    it('send FILE --select gives each matching node its own numbered, signed copy, one line a node; the same again is skipped as unchanged; the others are untouched', async () => {
      const db = (await kept())[`${DECLARATIONS_BUCKET}/db-1`];
      const app = file(`app-${count}`, { version: 1, mode: 'converged', resources: [{ type: 'file', id: 'conf', path: '/srv/app.conf', content: 'workers = 4\n' }] });
      const sent = await mesh.meshctl(['send', app, '--select', 'role=web']);
      expect(sent.code, sent.stderr).toBe(0);
      expect(sent.stdout).toMatch(/^web-1 +sent +sequence 2 \(revision \d+\)$/m);
      expect(sent.stdout).toMatch(/^web-2 +sent +sequence 2 \(revision \d+\)$/m);
      expect(sent.stdout).toMatch(/^2 nodes: 2 sent, 0 skipped \(unchanged\), 0 refused$/m);
      await until(hosts['web-1']!, 'srv/app.conf');
      await until(hosts['web-2']!, 'srv/app.conf');
      expect(readFileSync(join(hosts['web-2']!.root, 'srv/app.conf'), 'utf8')).toBe('workers = 4\n');
      const again = await mesh.meshctl(['send', app, '--select', 'role=web', '--json']);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout.trim().split('\n').map((l) => JSON.parse(l) as object)).toEqual([
        { node: 'web-1', outcome: 'skipped', reason: 'unchanged', mark: { sequence: 2 } },
        { node: 'web-2', outcome: 'skipped', reason: 'unchanged', mark: { sequence: 2 } },
      ]);
      expect((await kept())[`${DECLARATIONS_BUCKET}/db-1`]).toEqual(db);
      expect(existsSync(join(hosts['db-1']!.root, 'srv/app.conf'))).toBe(false);
    }, 90_000);

    it('send FILE --all: a node that refuses its copy (stale: its key is in a newer epoch) is its own line, the others go, and the exit status says not every send went', async () => {
      const newer = file(`db-newer-${count}`, { version: 1, node: 'db-1', mode: 'converged', resources: [] });
      expect((await mesh.meshctl(['send', 'db-1', newer, '--epoch', '5'])).code).toBe(0);
      const all = file(`all-${count}`, { version: 1, mode: 'converged', resources: [{ type: 'directory', id: 'd', path: '/srv/all' }] });
      const sent = await mesh.meshctl(['send', all, '--all', '--epoch', '1']);
      expect(sent.code).toBe(1);
      expect(sent.stdout).toMatch(/^db-1 +refused +.*declares epoch 1, sequence \d+, which is not newer than the key of db-1 \(epoch 5, sequence \d+/m);
      expect(sent.stdout).toMatch(/^web-1 +sent +epoch 1, sequence 3/m);
      expect(sent.stdout).toMatch(/^3 nodes: 2 sent, 0 skipped \(unchanged\), 1 refused$/m);
      await until(hosts['web-1']!, 'srv/all');
    }, 90_000);

    it('refused whole, nothing sent: a node with no key, a selector that matches nothing, a file that names one node, a declaration no host would take', async () => {
      const before = await kept();
      const app = file(`bad-${count}`, { version: 1, mode: 'converged', resources: [] });
      const ghost = await mesh.meshctl(['send', app, '--nodes', 'web-1,ghost']);
      expect(ghost.code).toBe(3);
      expect(ghost.stderr).toMatch(/ghost has no key in the mesh: nothing was sent/);
      const none = await mesh.meshctl(['send', app, '--select', 'site=z']);
      expect(none.code).toBe(3);
      expect(none.stderr).toMatch(/no node's labels match site=z: nothing was sent/);
      const named = await mesh.meshctl(['send', file(`named-${count}`, { version: 1, node: 'web-1', mode: 'converged', resources: [] }), '--all']);
      expect(named.code).toBe(3);
      expect(named.stderr).toMatch(/names the node "web-1": leave "node" out/);
      const invalid = await mesh.meshctl(['send', file(`invalid-${count}`, { version: 1, mode: 'converged', resources: [{ type: 'file', id: 'x' }] }), '--all']);
      expect(invalid.code).toBe(3);
      expect(invalid.stderr).toMatch(/\/resources\/0: must have required properties path, content/);
      const both = await mesh.meshctl(['send', 'web-1', app, '--all']);
      expect(both.code).toBe(2);
      expect(await kept()).toEqual(before);
    }, 60_000);
  });
});
