import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, type InitHost, type InitMesh } from '../support/mesh-init.js';
import { diff, snapshot, type Snapshot } from '../support/snapshot.js';
import { DECLARATIONS_BUCKET, ENROLMENTS_BUCKET, REPORTS_STREAM } from '../../src/link/wire.js';
import { OUTBOX_DIR } from '../../src/engine/report/outbox.js';
import { newOperatorKey, sign } from '../../src/core/declaration/envelope.js';
import { jetstreamManager } from '@nats-io/jetstream';
import type { PlanLine } from '../../src/control/fleet/plan-view.js';

const unavailable = natsUnavailable();

const app = (content: string) => ({ type: 'file', id: 'app', path: '/srv/app.conf', content });

describe.skipIf(unavailable !== undefined && !process.env.CI)(`meshctl plan over hosts on nats-servers in operator mode made by meshctl init${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  describe.each([1, 3])('%i server(s)', (count) => {
    let mesh: InitMesh;
    let control: NatsConnection;
    let hosts: InitHost[];
    const file = (name: string, declaration: object) => {
      const path = join(mesh.dir, '..', `${name}.json`);
      writeFileSync(path, JSON.stringify(declaration));
      return path;
    };
    /** Every host's whole root and state directory, as the kernel has them. */
    const disks = (): Snapshot => snapshot(Object.fromEntries(hosts.flatMap((h) => [[`${h.node}-root`, h.root], [`${h.node}-state`, h.state]])));
    /** What the mesh keeps: every key and enrolment with its revision, and the reports stream's count. */
    async function kept(): Promise<Record<string, unknown>> {
      const out: Record<string, unknown> = {};
      for (const bucket of [DECLARATIONS_BUCKET, ENROLMENTS_BUCKET]) {
        const kv = await new Kvm(control).open(bucket);
        for await (const key of await kv.keys()) out[`${bucket}/${key}`] = (await kv.get(key))?.revision;
      }
      out.reports = (await (await jetstreamManager(control)).streams.info(REPORTS_STREAM)).state.messages;
      return out;
    }

    /**
     * What the disks and the mesh hold once every host is done with its own reports: each acknowledged and
     * removed from its outbox (the removal may come up to a second after the acknowledgement). A plan must
     * change nothing from there, so a removal still due is not taken for the plan's doing.
     */
    async function settled(): Promise<{ disk: Snapshot; mesh: Record<string, unknown> }> {
      const pending = () => hosts.filter((h) => existsSync(join(h.state, OUTBOX_DIR)) && readdirSync(join(h.state, OUTBOX_DIR)).some((n) => n.endsWith('.json')));
      for (const started = Date.now(); pending().length > 0; await new Promise((r) => setTimeout(r, 100))) {
        if (Date.now() - started > 30_000) throw new Error(`reports still in the outbox of ${pending().map((h) => h.node).join(', ')}`);
      }
      return { disk: disks(), mesh: await kept() };
    }

    beforeAll(async () => {
      mesh = await initMesh({ servers: count });
      control = await mesh.control();
      hosts = [
        await mesh.enrol('web-1', { labels: ['role=web'], resources: [app('a\nb\n')] }),
        await mesh.enrol('web-2', { labels: ['role=web'], resources: [app('a\nb\n')] }),
        await mesh.enrol('db-1', { labels: ['role=db'], resources: [app('x\n')] }),
      ];
      // Each host's genesis report is in before anything is measured.
      const started = Date.now();
      while ((await kept()).reports !== 3) {
        if (Date.now() - started > 30_000) throw new Error('the genesis reports did not arrive');
        await new Promise((r) => setTimeout(r, 100));
      }
    }, 180_000);
    afterAll(async () => {
      await mesh?.close();
    });

    it('each host answers the plan it would make; the same change on several nodes is one line, the nodes that differ are named; it changes nothing on any host or in the mesh', async () => {
      const before = await settled();
      const next = file(`next-${count}`, { version: 1, mode: 'converged', resources: [app('a\nc\n'), { type: 'directory', id: 'new', path: '/srv/new' }] });
      const plan = await mesh.meshctl(['plan', next, '--all', '--diff']);
      expect(plan.code, plan.stderr).toBe(2);
      const lines = plan.stdout.split('\n');
      expect(lines[0]).toBe('plan for 3 nodes: 3 would change, 0 would not, 0 would refuse, 0 did not answer');
      expect(lines).toContain('3 nodes: create /srv/new');
      expect(lines).toContain('2 nodes: update /srv/app.conf: content (+1 −1 lines)  (web-1, web-2)');
      expect(lines).toContain('1 node:  update /srv/app.conf: content (+2 −1 lines)  (db-1)');
      // The diffs, grouped the same way.
      expect(plan.stdout).toMatch(/2 nodes \(web-1, web-2\): \/srv\/app\.conf\n[\s\S]*-b\n\+c/);
      expect(plan.stdout).toMatch(/1 node \(db-1\): \/srv\/app\.conf\n[\s\S]*-x\n\+a\n\+c/);
      // Not a byte, mode or time on any host's root or state directory; no key, enrolment or report in the mesh.
      expect(diff(before.disk, disks())).toEqual([]);
      expect(await kept()).toEqual(before.mesh);

      const json = await mesh.meshctl(['plan', next, '--select', 'role=web', '--json']);
      const answers = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as PlanLine);
      expect(answers.map((a) => [a.node, a.outcome])).toEqual([['web-1', 'planned'], ['web-2', 'planned']]);
      expect(answers[0]).toMatchObject({ declaration: { sequence: 2 }, unchanged: 0, held: [], steps: expect.arrayContaining([expect.objectContaining({ target: '/srv/app.conf', verb: 'update', changes: [{ kind: 'content', lines: { added: 1, removed: 1 } }] })]) });
      const same = await mesh.meshctl(['plan', file(`same-${count}`, { version: 1, mode: 'converged', resources: [app('a\nb\n')] }), '--select', 'role=web']);
      expect(same.code, same.stderr).toBe(0);
      expect(same.stdout).toMatch(/^nothing to do: web-1, web-2$/m);
    }, 60_000);

    it('a host refuses, and says why, a plan of a declaration older than what it applied; a plan request signed by another key is refused and changes nothing; exit 6 for change and refusal, 1 for a host that did not answer', async () => {
      const newer = file(`db-newer-${count}`, { version: 1, node: 'db-1', mode: 'converged', resources: [app('x\n')] });
      expect((await mesh.meshctl(['send', 'db-1', newer, '--epoch', '5'])).code).toBe(0);
      const started = Date.now();
      while (!/"epoch": ?5/.test((await mesh.meshctl(['status', 'db-1', '--json'])).stdout)) {
        if (Date.now() - started > 30_000) throw new Error('db-1 did not apply epoch 5');
        await new Promise((r) => setTimeout(r, 200));
      }
      const before = await settled();
      const older = file(`older-${count}`, { version: 1, mode: 'converged', resources: [app('a\nc\n')] });
      const plan = await mesh.meshctl(['plan', older, '--all', '--epoch', '1']);
      expect(plan.code, plan.stdout).toBe(6);
      expect(plan.stdout).toMatch(/^would refuse:\n {2}db-1: stale: /m);

      // A request whose envelope another key signed: refused as forged, never planned.
      const stranger = await newOperatorKey();
      const forged = await sign(Buffer.from(JSON.stringify({ version: 1, node: 'web-1', mode: 'converged', sequence: 9, resources: [] })), stranger.seed);
      const answer = (await control.request('mesh.node.web-1.plan', JSON.stringify({ envelope: forged }), { timeout: 10_000 })).json<PlanLine>();
      expect(answer).toMatchObject({ node: 'web-1', outcome: 'refused', refusal: 'forged' });
      const garbage = (await control.request('mesh.node.web-1.plan', 'not json', { timeout: 10_000 })).json<PlanLine>();
      expect(garbage).toMatchObject({ outcome: 'refused', refusal: 'invalid' });
      expect(diff(before.disk, disks())).toEqual([]);
      expect(await kept()).toEqual(before.mesh);

      await hosts[1]!.stop();
      const silent = await mesh.meshctl(['plan', older, '--nodes', 'web-1,web-2', '--timeout', '2s']);
      expect(silent.code).toBe(1);
      expect(silent.stdout).toMatch(/^did not answer within 2s:\n {2}web-2: /m);
    }, 90_000);
  });
});
