import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import * as nkeys from '@nats-io/nkeys';
import { natsUnavailable } from '../support/nats.js';
import { holdsTrust, initMesh, type InitHost, type InitMesh } from '../support/mesh-init.js';
import { reportsOf } from '../support/daemon.js';
import { DECLARATIONS_BUCKET } from '../../src/link/wire.js';
import { sign } from '../../src/core/declaration/envelope.js';
import type { Report } from '../../src/engine/report/report.js';

const unavailable = natsUnavailable();

describe.skipIf(unavailable !== undefined && !process.env.CI)(`a rotatable trust root, on a real server and real daemons${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let mesh: InitMesh;
  let control: NatsConnection;
  let n = 0;
  const file = (node: string) => {
    const path = join(mesh.dir, '..', `d${++n}.json`);
    writeFileSync(path, JSON.stringify({ version: 1, node, mode: 'converged', resources: [{ type: 'directory', id: `d${n}`, path: `/srv/d${n}` }] }));
    return path;
  };
  const keygen = async (name: string) => {
    const r = await mesh.meshctl(['keygen', '--out', join(mesh.dir, '..', name)]);
    expect(r.code, r.stderr).toBe(0);
    return join(mesh.dir, '..', name, 'operator.nk');
  };
  const ok = async (args: string[]) => {
    const r = await mesh.meshctl(args);
    expect(r.code, `${args.join(' ')}\n${r.stderr}\n${r.stdout}`).toBe(0);
    return r.stdout;
  };
  async function report(node: string, what: string, match: (r: Report) => boolean, timeoutMs = 60_000): Promise<Report> {
    for (const started = Date.now(); ; await new Promise((r) => setTimeout(r, 100))) {
      const found = (await reportsOf(control, node)).find(match);
      if (found) return found;
      if (Date.now() - started > timeoutMs) throw new Error(`${node}: no report ${what}: ${JSON.stringify(await reportsOf(control, node))}`);
    }
  }
  /** A declaration signed by this seed, put into the node's key as a thief with write access to the bucket would. */
  async function putSignedBy(node: string, seedFile: string, sequence: number): Promise<void> {
    const payload = Buffer.from(JSON.stringify({ version: 1, node, mode: 'converged', sequence, resources: [{ type: 'directory', id: 'stolen', path: '/srv/stolen' }] }));
    const envelope = await sign(payload, readFileSync(seedFile, 'utf8'));
    await (await new Kvm(control).open(DECLARATIONS_BUCKET)).put(node, JSON.stringify(envelope));
  }
  const sentSequence = (out: string) => Number(/sequence (\d+)/.exec(out)![1]);
  const converged = (host: InitHost, sequence: number) => report(host.node, `converged at ${sequence}`, (r) => r.declaration?.sequence === sequence && r.outcome === 'converged');

  beforeAll(async () => {
    mesh = await initMesh();
    control = await mesh.control();
  }, 120_000);
  afterAll(async () => {
    await mesh?.close();
  });

  it('init makes version 1 with a recovery key to move off the machine; rotations are followed by every host, one stopped through two of them included; the retired key is refused by meshctl and by every host; the recovery key replaces a stolen key', async () => {
    const words = readFileSync(join(mesh.dir, 'recovery', 'MOVE-THESE-KEYS-OFF-THIS-MACHINE.txt'), 'utf8');
    expect(words).toMatch(/MOVE THESE KEYS OFF THIS MACHINE/);
    expect(words).toMatch(/meshctl trust recover/);
    const first = join(mesh.dir, 'operator.nk');
    const [a, b] = [await mesh.enrol('trust-a'), await mesh.enrol('trust-b')];
    await Promise.all([holdsTrust(control, 'trust-a', 1), holdsTrust(control, 'trust-b', 1)]);
    expect(await ok(['trust', 'show'])).toMatch(/trust version 1[\s\S]*trust-a\s+holds version 1/);

    // b is off for the next two rotations.
    await b.stop();
    const second = await keygen('k2');
    expect(await ok(['trust', 'rotate', '--to', second])).toMatch(/trust version 2 published[\s\S]*retired: O\w+/);
    await holdsTrust(control, 'trust-a', 2);

    // meshctl refuses to sign with the retired key; a declaration signed by it anyway is refused by the host, saying why.
    const refusedSend = await mesh.meshctl(['send', 'trust-a', file('trust-a'), '--key', first]);
    expect(refusedSend.code).toBe(3);
    expect(refusedSend.stderr).toMatch(/may not sign declarations: it was retired at trust version 2/);
    await putSignedBy('trust-a', first, 100);
    const refusal = await report('trust-a', 'refusing the retired key', (r) => r.outcome === 'refused');
    expect(refusal.error?.message).toMatch(/signed by a key retired at trust version 2/);
    // The mesh directory's default key followed the rotation.
    const sent = await ok(['send', 'trust-a', file('trust-a')]);
    await converged(a, sentSequence(sent));

    const third = await keygen('k3');
    await ok(['trust', 'rotate', '--to', third]);
    await holdsTrust(control, 'trust-a', 3);
    const show = await ok(['trust', 'show']);
    expect(show).toMatch(/trust-b\s+holds version 1\s+BEHIND/);
    expect(show).toMatch(/1 host is behind: trust-b/);
    const fleet = await mesh.meshctl(['status']);
    expect(fleet.stdout).toMatch(/trust-b .* v1 \(behind\)/);
    expect(fleet.stdout).toMatch(/trust: it holds version 1, the mesh is at version 3: it has not followed the rotation/);
    expect(fleet.stdout).toMatch(/trust-a .* v3 /);

    // b starts: it walks versions 2 and 3 in order, then takes what version 3's key signs.
    await b.start();
    await holdsTrust(control, 'trust-b', 3);
    expect(b.log()).toMatch(/followed the mesh's trust root to version 2[\s\S]*followed the mesh's trust root to version 3/);
    const toB = await ok(['send', 'trust-b', file('trust-b')]);
    await converged(b, sentSequence(toB));

    // The third key is stolen: the recovery key alone replaces it.
    const fourth = await keygen('k4');
    await ok(['trust', 'recover', '--recovery-key', join(mesh.dir, 'recovery', 'recovery-1.nk'), '--to', fourth]);
    await Promise.all([holdsTrust(control, 'trust-a', 4), holdsTrust(control, 'trust-b', 4)]);
    await putSignedBy('trust-b', third, 200);
    const stolen = await report('trust-b', 'refusing the stolen key', (r) => r.outcome === 'refused' && /retired at trust version 4/.test(r.error?.message ?? ''));
    expect(stolen.error?.message).toMatch(/signed by a key retired at trust version 4/);
    const afterRecovery = await ok(['send', 'trust-b', file('trust-b')]);
    await converged(b, sentSequence(afterRecovery));
    expect(await ok(['trust', 'show'])).not.toMatch(/BEHIND/);
  }, 300_000);

  it('a rotation made from docs/wire.md alone (a small script: its own nkeys and base64, no code of this project) is followed by a host', async () => {
    const host = await mesh.enrol('trust-d');
    // What the script knows: the bucket, the key of a version, the record and the root as documented.
    const bucket = await new Kvm(control).open('mesh_trust');
    let held = 0;
    for (let v = 1; (await bucket.get(`v${v}`))?.operation === 'PUT'; v++) held = v;
    const current = JSON.parse(Buffer.from((JSON.parse((await bucket.get(`v${held}`))!.string()) as { root: string }).root, 'base64').toString()) as { control: { keys: string[] }; recovery: object };
    const meshFile = JSON.parse(readFileSync(join(mesh.dir, 'mesh.json'), 'utf8')) as { key: string };
    const signers = [readFileSync(join(mesh.dir, meshFile.key), 'utf8').trim(), ''];
    const fresh = nkeys.createOperator();
    signers[1] = new TextDecoder().decode(fresh.getSeed());
    expect(current.control.keys).toContain(nkeys.fromSeed(new TextEncoder().encode(signers[0]!)).getPublicKey());
    // Another spacing and field order than meshctl writes: the signatures are over the bytes as carried.
    const root = Buffer.from(`{"version": ${held + 1}, "kind": "mesh-trust-root", "recovery": ${JSON.stringify(current.recovery)}, "control": {"threshold": 1, "keys": ["${fresh.getPublicKey()}"]}}`);
    const signatures = signers.map((seed) => {
      const pair = nkeys.fromSeed(new TextEncoder().encode(seed));
      return { key: pair.getPublicKey(), signature: Buffer.from(pair.sign(root)).toString('base64') };
    });
    await bucket.create(`v${held + 1}`, JSON.stringify({ root: root.toString('base64'), signatures }));
    await holdsTrust(control, 'trust-d', held + 1);

    // The new key signs what the host takes; meshctl reads the version from the mesh into its directory.
    const seedFile = join(mesh.dir, '..', 'scripted.nk');
    writeFileSync(seedFile, signers[1], { mode: 0o600 });
    const sent = await ok(['send', 'trust-d', file('trust-d'), '--key', seedFile]);
    await converged(host, sentSequence(sent));
    expect(readFileSync(join(mesh.dir, 'trust', `${held + 1}.json`), 'utf8')).toContain(root.toString('base64'));
    // meshctl rotates on from the version the script made; the mesh directory signs with the new key.
    await ok(['trust', 'rotate', '--key', seedFile, '--to', await keygen('k-after')]);
    await holdsTrust(control, 'trust-d', held + 2);
  }, 300_000);

  it('with a threshold of 2 a send is proposed and nothing is delivered until a second key approves; the host refuses one signature', async () => {
    const host = await mesh.enrol('trust-c');
    const [p, q] = [await keygen('k5'), await keygen('k6')];
    const rotated = JSON.parse(await ok(['trust', 'rotate', '--to', p, '--add', q, '--threshold', '2', '--json'])) as { version: number };
    await holdsTrust(control, 'trust-c', rotated.version);
    const kv = await new Kvm(control).open(DECLARATIONS_BUCKET);
    const before = (await kv.get('trust-c'))!.revision;

    const proposed = await ok(['send', 'trust-c', file('trust-c'), '--json']);
    const { id, signatures, needed } = JSON.parse(proposed) as { id: string; signatures: number; needed: number };
    expect([signatures, needed]).toEqual([1, 2]);
    expect((await kv.get('trust-c'))!.revision).toBe(before);
    expect(await ok(['proposals'])).toMatch(new RegExp(`${id} .* 1 of 2 signatures`));

    const again = await mesh.meshctl(['approve', id]);
    expect(again.code).toBe(3);
    expect(again.stderr).toMatch(/has signed p-\w+ already: a key counts once/);
    expect((await kv.get('trust-c'))!.revision).toBe(before);

    const approved = await ok(['approve', id, '--key', q]);
    expect(approved).toMatch(/trust-c\s+sent\s+sequence (\d+).*approved by 2 keys/);
    await converged(host, sentSequence(approved));
    expect(await ok(['proposals'])).toMatch(/no declaration waits for approval/);

    // One valid signature is not enough, whoever puts it into the key.
    await putSignedBy('trust-c', p, 300);
    const refusal = await report('trust-c', 'refusing one signature', (r) => r.outcome === 'refused');
    expect(refusal.error?.message).toMatch(new RegExp(`1 valid signature of the control keys; trust version ${rotated.version} needs 2`));
  }, 300_000);
});
