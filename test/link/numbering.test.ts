import { describe, expect, it } from 'vitest';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import { control } from '../support/daemon.js';
import { useMeshHost } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';
import { runCli } from '../support/cli.js';
import { DECLARATIONS_BUCKET } from '../../src/link/wire.js';

const unavailable = natsUnavailable();
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(unavailable !== undefined && !process.env.CI)(`meshctl numbers declarations safely${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  // The fixture makes its bundle with `meshctl bundle --server`: the first declaration (epoch 1,
  // sequence 1) is then the value of the node's key, and genesis knows that revision.
  const mesh = useMeshHost();

  const key = () => join(mesh.host.dir, 'keys/operator.nk');
  const file = (name: string, over: object = {}) => {
    const path = join(mesh.host.dir, `${name}.json`);
    writeFileSync(path, JSON.stringify({ version: 1, node: mesh.host.node, mode: 'converged', resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'directory', id: name, path: `/srv/${name}` }], ...over }));
    return path;
  };
  const send = (path: string, extra: string[] = []) => runCli('meshctl', ['send', mesh.host.node, path, '--key', key(), '--server', mesh.server.url, '--json', '--log-level', 'warn', ...extra]);

  it('the first send after genesis with an epoch is applied: it takes the next sequence in the epoch in force', async () => {
    const sent = await send(file('first'));
    expect(sent.code, sent.stderr).toBe(0);
    expect(JSON.parse(sent.stdout)).toMatchObject({ node: mesh.host.node, epoch: 1, sequence: 2 });
    const reports = await mesh.host.waitForReports(2);
    // The bundle's value of the key was read as what genesis applied: no second report of it.
    expect(reports.map((r) => [r.sequence, r.trigger, r.outcome, r.declaration?.sequence])).toEqual([[1, 'genesis', 'converged', 1], [2, 'delivery', 'converged', 2]]);
    expect(existsSync(join(mesh.host.root, 'srv/first'))).toBe(true);
  });

  it('keeps a sequence the file declares, and refuses one not newer than the key (exit 3, both numbers named)', async () => {
    const stale = await send(file('stale', { epoch: 1, sequence: 2 }));
    expect(stale.code).toBe(3);
    expect(stale.stderr).toMatch(/epoch 1, sequence 2.*not newer.*epoch 1, sequence 2/);
    expect(stale.stderr).not.toMatch(/\n\s+at /);
    const kept = await send(file('kept', { epoch: 1, sequence: 500 }));
    expect(kept.code, kept.stderr).toBe(0);
    expect(JSON.parse(kept.stdout)).toMatchObject({ epoch: 1, sequence: 500 });
    const reports = await mesh.host.waitForReports(3);
    expect(reports[2]).toMatchObject({ trigger: 'delivery', outcome: 'converged', declaration: { epoch: 1, sequence: 500 } });
  });

  it('two sends at once get distinct sequences, and both are in the mesh; --epoch N sets the epoch', async () => {
    const [a, b] = await Promise.all([send(file('one')), send(file('two'))]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const sa = JSON.parse(a.stdout) as { sequence: number; revision: number };
    const sb = JSON.parse(b.stdout) as { sequence: number; revision: number };
    expect(new Set([sa.sequence, sb.sequence])).toEqual(new Set([501, 502]));
    expect(sa.revision).not.toBe(sb.revision);
    // Both values are in the key's history, each with its own number.
    const nc = await control([mesh.server.url]);
    try {
      const kv = await new Kvm(nc).open(DECLARATIONS_BUCKET);
      const seen: number[] = [];
      for await (const e of await kv.history({ key: mesh.host.node })) {
        const env = JSON.parse(e.string()) as { payload: string };
        seen.push((JSON.parse(Buffer.from(env.payload, 'base64').toString('utf8')) as { sequence: number }).sequence);
      }
      expect(seen).toEqual(expect.arrayContaining([501, 502]));
    } finally {
      await nc.close();
    }
    // The host applies the newest; one that arrived while it was pending may be superseded, never applied after it.
    const deadline = Date.now() + 20_000;
    let reports = await mesh.host.reports();
    while (!reports.some((r) => r.declaration?.sequence === 502) && Date.now() < deadline) {
      await wait(200);
      reports = await mesh.host.reports();
    }
    const delivered = reports.filter((r) => r.trigger === 'delivery').map((r) => r.declaration!.sequence);
    expect(delivered.at(-1)).toBe(502);
    expect(delivered.every((x, i) => i === 0 || x > delivered[i - 1]!)).toBe(true);

    const epoch = await send(file('epoch2'), ['--epoch', '2']);
    expect(epoch.code, epoch.stderr).toBe(0);
    expect(JSON.parse(epoch.stdout)).toMatchObject({ epoch: 2, sequence: 503 });
    await mesh.host.waitForReports(reports.length + 1);
    expect((await mesh.host.reports()).at(-1)).toMatchObject({ outcome: 'converged', declaration: { epoch: 2, sequence: 503 } });
  });
});
