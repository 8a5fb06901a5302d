import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV } from '@nats-io/kv';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, untilFile, type InitHost, type InitMesh } from '../support/mesh-init.js';
import { DECLARATIONS_BUCKET, heartbeatSubject } from '../../src/link/wire.js';
import { SEALING_KEY_FILE } from '../../src/engine/report/sealing-key.js';
import { curvePublicKey } from '../../src/core/declaration/sealed.js';

const unavailable = natsUnavailable();

/**
 * Two-person approval beyond `send`: under a trust root that needs two control keys, a rollout, a rollback
 * and a reseal each sign once and leave what they would deliver proposed; the hosts' keys do not move until
 * a second key approves, and then the hosts take it (a rollout's waves run after the approval).
 */
describe.skipIf(unavailable !== undefined && !process.env.CI)(`two-person approval of rollout, rollback and reseal, on a real server and real daemons${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let mesh: InitMesh;
  let control: NatsConnection;
  let kv: KV;
  let a: InitHost;
  let b: InitHost;
  let second: string;
  let n = 0;
  const SECRET = 'the token only ap-a may read\n';
  /** A fleet declaration (no node): /srv/v saying which version. */
  const fleetFile = (v: string) => {
    const path = join(mesh.dir, '..', `fleet-${++n}.json`);
    writeFileSync(path, JSON.stringify({ version: 1, mode: 'converged', resources: [{ type: 'file', id: 'v', path: '/srv/v', content: v }] }));
    return path;
  };
  /** ap-a's own declaration: a token sealed to its curve key. */
  const tokenFile = () => {
    const path = join(mesh.dir, '..', `token-${++n}.json`);
    writeFileSync(path, JSON.stringify({ version: 1, node: 'ap-a', mode: 'converged', resources: [{ type: 'file', id: 'token', path: '/srv/token', content: SECRET, sensitive: true, mode: '0600' }] }));
    return path;
  };
  const ok = async (args: string[]) => {
    const r = await mesh.meshctl(args);
    expect(r.code, `${args.join(' ')}\n${r.stderr}\n${r.stdout}`).toBe(0);
    return r.stdout;
  };
  const keygen = async (name: string) => {
    await ok(['keygen', '--out', join(mesh.dir, '..', name)]);
    return join(mesh.dir, '..', name, 'operator.nk');
  };
  /** Each node key's revision: what a host would be sent next moves it. */
  const revisions = async () => Promise.all(['ap-a', 'ap-b'].map(async (node) => (await kv.get(node))?.revision));
  /** The node's first heartbeat after the call that satisfies the test. */
  function beat(node: string, test: (b: { trustVersion?: number; sealing?: { key: string } }) => boolean, what: string, timeoutMs = 60_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => (sub.unsubscribe(), reject(new Error(`${node}: no heartbeat ${what} within ${timeoutMs} ms`))), timeoutMs);
      const sub = control.subscribe(heartbeatSubject(node), {
        callback: (_e, m) => {
          if (!test(JSON.parse(m.string()) as { trustVersion?: number })) return;
          clearTimeout(timer);
          sub.unsubscribe();
          resolve();
        },
      });
    });
  }

  beforeAll(async () => {
    mesh = await initMesh();
    control = await mesh.control();
    kv = await new Kvm(control).open(DECLARATIONS_BUCKET);
    [a, b] = await Promise.all([mesh.enrol('ap-a', { labels: ['role=ap'] }), mesh.enrol('ap-b', { labels: ['role=ap'] })]);
    // Under the threshold of 1 init made: the first version, sent by one key.
    await ok(['rollout', fleetFile('v1\n'), '--select', 'role=ap', '--waves', '100%', '--wait', '30s']);
    await Promise.all([untilFile(a, 'srv/v', 'v1\n'), untilFile(b, 'srv/v', 'v1\n')]);
    const first = await keygen('p');
    second = await keygen('q');
    const rotated = JSON.parse(await ok(['trust', 'rotate', '--to', first, '--add', second, '--threshold', '2', '--json'])) as { version: number };
    await Promise.all(['ap-a', 'ap-b'].map((node) => beat(node, (h) => h.trustVersion === rotated.version, `holding trust version ${rotated.version}`)));
  }, 180_000);
  afterAll(async () => {
    await mesh?.close();
  });

  it('a rollout is proposed whole, nothing sent; one approval by a second key sends every wave in order', async () => {
    const before = await revisions();
    const proposed = JSON.parse(await ok(['rollout', fleetFile('v2\n'), '--select', 'role=ap', '--waves', '1,100%', '--wait', '30s', '--json'])) as { id: string; made: string; rollout: string; signatures: number; needed: number; nodes: { node: string }[] };
    expect([proposed.made, proposed.signatures, proposed.needed, proposed.nodes.length]).toEqual(['rollout', 1, 2, 2]);
    expect(await revisions()).toEqual(before);
    expect(await ok(['proposals'])).toMatch(new RegExp(`${proposed.id} .* 1 of 2 signatures`));
    // The rollout waits: it cannot be driven on one key, and a second rollout of its nodes is refused.
    const resumed = await mesh.meshctl(['rollout', '--resume', proposed.rollout]);
    expect(resumed.code).toBe(3);
    expect(resumed.stderr).toMatch(new RegExp(`rollout ${proposed.rollout} waits for approval: nothing was sent`));
    const overlap = await mesh.meshctl(['rollout', fleetFile('v9\n'), '--select', 'role=ap']);
    expect(overlap.stderr).toMatch(/proposed, waiting for approval/);
    // The proposer's own key counts once.
    const twice = await mesh.meshctl(['approve', proposed.id]);
    expect(twice.stderr).toMatch(/a key counts once/);
    expect(await revisions()).toEqual(before);
    expect(readFileSync(join(a.root, 'srv/v'), 'utf8')).toBe('v1\n');

    const approved = await mesh.meshctl(['approve', proposed.id, '--key', second, '--json']);
    expect(approved.code, `${approved.stderr}\n${approved.stdout}`).toBe(0);
    const events = approved.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { event: string; node?: string; phase?: string });
    expect(events[0]!.event).toBe('started');
    const sent = events.flatMap((e, i) => (e.event === 'sent' ? [i] : []));
    expect(sent.map((i) => events[i]!.node).sort()).toEqual(['ap-a', 'ap-b']);
    // Wave 1 (one node) converged before wave 2 was sent.
    const firstNode = events[sent[0]!]!.node;
    const converged = events.findIndex((e) => e.event === 'node' && e.node === firstNode && e.phase === 'converged');
    const waveDone = events.findIndex((e) => e.event === 'wave-done');
    expect(converged).toBeGreaterThan(sent[0]!);
    expect(waveDone).toBeGreaterThan(converged);
    expect(sent[1]).toBeGreaterThan(waveDone);
    expect(events.at(-1)!.event).toBe('done');
    await Promise.all([untilFile(a, 'srv/v', 'v2\n'), untilFile(b, 'srv/v', 'v2\n')]);
    expect(await ok(['proposals'])).toMatch(/no declaration waits for approval/);
  }, 180_000);

  it('a rollback of a node is proposed, nothing put back; the approval puts it back', async () => {
    const before = await revisions();
    const proposed = JSON.parse(await ok(['rollback', 'ap-b', '--json'])) as { id: string; made: string };
    expect(proposed.made).toBe('rollback');
    expect(await revisions()).toEqual(before);
    expect(readFileSync(join(b.root, 'srv/v'), 'utf8')).toBe('v2\n');
    const approved = await ok(['approve', proposed.id, '--key', second]);
    expect(approved).toMatch(/ap-b\s+sent\s+sequence \d+.*approved by 2 keys/);
    await untilFile(b, 'srv/v', 'v1\n');
    expect((await revisions())[0]).toBe(before[0]);
  }, 120_000);

  it('a reseal to a host\'s new curve key is proposed, nothing put; the approval puts it and the host opens its secret again', async () => {
    const token = join(a.root, 'srv/token');
    const sending = JSON.parse(await ok(['send', 'ap-a', tokenFile(), '--json'])) as { id: string };
    await ok(['approve', sending.id, '--key', second]);
    await untilFile(a, 'srv/token', SECRET);
    await a.stop();
    rmSync(join(a.state, SEALING_KEY_FILE));
    writeFileSync(token, 'drifted while down\n');
    const newKey = beat('ap-a', (h) => existsSync(join(a.state, SEALING_KEY_FILE)) && h.sealing?.key === curvePublicKey(readFileSync(join(a.state, SEALING_KEY_FILE), 'utf8')), 'with its new curve key');
    await a.start();
    await newKey;
    const before = await revisions();
    const proposed = JSON.parse(await ok(['reseal', 'ap-a', '--json'])) as { id: string; made: string; signatures: number };
    expect([proposed.made, proposed.signatures]).toEqual(['reseal', 1]);
    expect(await revisions()).toEqual(before);
    expect(readFileSync(token, 'utf8')).toBe('drifted while down\n');
    await ok(['approve', proposed.id, '--key', second]);
    await untilFile(a, 'srv/token', SECRET);
  }, 120_000);

  it('a rollout approved, halted by a host that fails, then resumed: the copy sent again is proposed again, and sent once a second key approves', async () => {
    // On ap-b the file's path is a directory: its plan refuses it, the rollout halts.
    mkdirSync(join(b.root, 'srv/w'), { recursive: true });
    const path = join(mesh.dir, '..', `fleet-${++n}.json`);
    writeFileSync(path, JSON.stringify({ version: 1, mode: 'converged', resources: [{ type: 'file', id: 'v', path: '/srv/v', content: 'v2\n' }, { type: 'file', id: 'w', path: '/srv/w', content: 'w\n' }] }));
    const proposed = JSON.parse(await ok(['rollout', path, '--nodes', 'ap-a,ap-b', '--waves', '100%', '--wait', '30s', '--json'])) as { id: string; rollout: string };
    const halted = await mesh.meshctl(['approve', proposed.id, '--key', second, '--json']);
    expect(halted.code, halted.stderr).toBe(1);
    expect(halted.stdout).toMatch(/"event":"halted".*"node":"ap-b"/);
    await untilFile(a, 'srv/w', 'w\n');
    rmSync(join(b.root, 'srv/w'), { recursive: true });
    const before = await revisions();
    const again = JSON.parse(await ok(['rollout', '--resume', proposed.rollout, '--json'])) as { id: string; made: string; rollout: string; nodes: { node: string }[] };
    expect([again.made, again.rollout, again.nodes.map((x) => x.node)]).toEqual(['rollout', proposed.rollout, ['ap-b']]);
    expect(await revisions()).toEqual(before);
    const resumed = await mesh.meshctl(['approve', again.id, '--key', second, '--json']);
    expect(resumed.code, `${resumed.stderr}\n${resumed.stdout}`).toBe(0);
    const sent = resumed.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { event: string; node?: string }).filter((e) => e.event === 'sent');
    expect(sent.map((e) => e.node)).toEqual(['ap-b']);
    await untilFile(b, 'srv/w', 'w\n');
    expect((await revisions())[0]).toBe(before[0]);
  }, 180_000);
});
