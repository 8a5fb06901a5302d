import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, type InitMesh } from '../support/mesh-init.js';
import { ensureWire } from '../../src/link/control.js';
import { publishVersion, readLocalTrust } from '../../src/control/commands/mesh-trust.js';
import { openTrustBucket, readTrustVersions } from '../../src/link/trust-bucket.js';

const unavailable = natsUnavailable();

describe.skipIf(unavailable !== undefined && !process.env.CI)(`publishing a trust version, on a real server${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let mesh: InitMesh;
  let control: NatsConnection;

  beforeAll(async () => {
    mesh = await initMesh();
    control = await mesh.control();
  }, 120_000);
  afterAll(async () => {
    await mesh?.close();
  });

  it('the same record published twice is no conflict; a different record under a version already there is refused, and the bucket keeps the first', async () => {
    await ensureWire(control);
    const [first] = readLocalTrust(mesh.dir);
    await publishVersion(control, 1, first!);
    await publishVersion(control, 1, first!);
    const other = { ...first!, signatures: [] };
    await expect(publishVersion(control, 1, other)).rejects.toThrow(/trust version 1 could not be published: .*another rotation made it first/);
    const held = await readTrustVersions((await openTrustBucket(control))!);
    expect(held.map((b) => JSON.parse(Buffer.from(b).toString('utf8')))).toEqual([first]);
  });

  it('bundles made side by side on a mesh whose servers hold no trust yet each succeed', async () => {
    const fresh = await initMesh();
    try {
      const made = await Promise.all(['p-a', 'p-b', 'p-c'].map(async (node) => {
        const at = (name: string) => join(fresh.dir, '..', `${node}-${name}`);
        expect((await fresh.meshctl(['node-key', node, '--out', at('node.nk')])).code).toBe(0);
        writeFileSync(at('first.json'), JSON.stringify({ version: 1, node, mode: 'converged', resources: [] }));
        return fresh.meshctl(['bundle', at('first.json'), '--node-key', at('node.nk'), '--out', at('bundle.json')]);
      }));
      expect(made.map((r) => [r.code, r.stderr.match(/could not be published.*/)?.[0]])).toEqual([[0, undefined], [0, undefined], [0, undefined]]);
    } finally {
      await fresh.close();
    }
  }, 120_000);
});
