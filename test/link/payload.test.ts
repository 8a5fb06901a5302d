import { afterAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream, DeliverPolicy } from '@nats-io/jetstream';
import { control } from '../support/daemon.js';
import { useMeshHost } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';
import { runCli } from '../support/cli.js';
import { REPORTS_STREAM, reportSubject } from '../../src/link/wire.js';
import type { Report } from '../../src/engine/report/report.js';
import type { SentReport } from '../../src/engine/report/sent.js';
import type { Resource } from '../../src/core/declaration/schema.js';
import { scratch } from '../support/tree.js';

const unavailable = natsUnavailable();
const LIMIT = 16_384;

describe.skipIf(unavailable !== undefined && !process.env.CI)(`reports and declarations against a server whose max_payload is ${LIMIT}${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const conf = scratch('mesh-host-payload-');
  const configFile = join(conf.dir, 'nats.conf');
  writeFileSync(configFile, `max_payload: ${LIMIT}\n`);
  const mesh = useMeshHost({ server: { configFile } });
  afterAll(() => conf.cleanup());

  it('a report past the limit arrives fitted under it: it says how much was left out and where; the host keeps every step', async () => {
    const files: Resource[] = Array.from({ length: 150 }, (_, i) => ({ type: 'file', id: `f${i}`, path: `/srv/app/f${i}`, content: 'k' }));
    await mesh.host.put({ epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, ...files] });
    await mesh.host.waitForReports(2, 60_000);
    // The bytes as the stream holds them.
    const nc = await control([mesh.server.url]);
    let raw: Uint8Array;
    try {
      const consumer = await jetstream(nc).consumers.get(REPORTS_STREAM, { filter_subjects: reportSubject(mesh.host.node), deliver_policy: DeliverPolicy.Last });
      raw = (await consumer.next({ expires: 5000 }))!.data;
    } finally {
      await nc.close();
    }
    expect(raw.length).toBeLessThanOrEqual(LIMIT);
    const sent = JSON.parse(new TextDecoder().decode(raw)) as SentReport;
    expect(sent).toMatchObject({ sequence: 2, outcome: 'converged', counts: { done: 150, unchanged: 1 }, unchanged: { directory: 1 } });
    expect(sent.omitted!.steps).toBe(150 - sent.steps.length);
    expect(sent.omitted!.steps).toBeGreaterThan(0);
    expect(sent.omitted!.bytes).toBeGreaterThan(sent.omitted!.limit);
    expect(sent.omitted!.limit).toBeLessThanOrEqual(LIMIT);
    expect(sent.omitted!.where).toContain('mesh-host status --last-report');
    const whole = await runCli('mesh-host', ['status', '--last-report', '--json', ...mesh.host.flags]);
    expect(whole.code, whole.stderr).toBe(0);
    const full = JSON.parse(whole.stdout) as Report;
    expect(full.sequence).toBe(2);
    expect(full.steps).toHaveLength(151);
  });

  it('meshctl send refuses a declaration whose signed envelope would pass the limit: exit 3, both sizes, what to do, no stack trace', async () => {
    const path = join(mesh.host.dir, 'big.json');
    writeFileSync(path, JSON.stringify({ version: 1, node: mesh.host.node, mode: 'converged', resources: [{ type: 'file', id: 'big', path: '/srv/big', content: 'x'.repeat(LIMIT) }] }));
    const sent = await runCli('meshctl', ['send', mesh.host.node, path, '--key', join(mesh.host.dir, 'keys/operator.nk'), '--server', mesh.server.url]);
    expect(sent.code).toBe(3);
    expect(sent.stderr).toMatch(new RegExp(`\\d{5,} bytes.*at most ${LIMIT} bytes`));
    expect(sent.stderr).toMatch(/archives/);
    expect(sent.stderr).not.toMatch(/\n\s+at |unexpected failure/);
  });
});
