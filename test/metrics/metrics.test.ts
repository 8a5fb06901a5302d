import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useMesh } from '../support/mesh.js';
import { freePort, natsUnavailable } from '../support/nats.js';
import { newOperatorKey } from '../../src/core/declaration/envelope.js';
import { parseLoopbackListen } from '../../src/host/metrics/export.js';

const unavailable = natsUnavailable();

/** `name{labels} value` lines of the text format, by name and labels as written. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}
const value = (s: Map<string, number>, name: string, labels: Record<string, string> = {}) => {
  for (const [key, v] of s) {
    if (!key.startsWith(`${name}{`) && key !== name) continue;
    if (Object.entries(labels).every(([k, l]) => key.includes(`${k}="${l}"`))) return v;
  }
  return undefined;
};

describe('metricsListen is loopback only', () => {
  it('takes 127.0.0.0/8, ::1 and localhost; refuses anything else, naming it', () => {
    expect(parseLoopbackListen('127.0.0.1:9464')).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(parseLoopbackListen('[::1]:9464')).toEqual({ host: '::1', port: 9464 });
    expect(parseLoopbackListen('localhost:1')).toEqual({ host: 'localhost', port: 1 });
    expect(parseLoopbackListen('0.0.0.0:9464')).toEqual({ problem: expect.stringContaining("'0.0.0.0:9464' is not a loopback address") });
    expect(parseLoopbackListen('10.0.0.1:9464')).toHaveProperty('problem');
    expect(parseLoopbackListen('127.0.0.1')).toHaveProperty('problem');
  });
});

describe.skipIf(unavailable !== undefined && !process.env.CI)(`metrics of a real daemon, against a real nats-server${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const mesh = useMesh();

  it('scraped over HTTP and read from the textfile, with values that match the reports', async () => {
    const port = await freePort();
    const h = await mesh.enrol({ config: { metricsListen: `127.0.0.1:${port}` }, start: false });
    const file = join(h.dir, 'textfile', 'mesh-host.prom');
    writeFileSync(h.config, JSON.stringify({ ...JSON.parse(readFileSync(h.config, 'utf8')), metricsFile: file }));
    await h.start();
    await h.put({ epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: 'x=1\n' }] });
    const until = async (count: number) => {
      for (const started = Date.now(); ; await new Promise((r) => setTimeout(r, 100))) {
        const got = await h.reports().catch(() => []);
        if (got.some((r) => r.declaration?.sequence === 2) && got.length >= count) return got;
        if (Date.now() - started > 30_000) throw new Error(`reports: ${JSON.stringify(got.map((r) => [r.trigger, r.outcome]))}`);
      }
    };
    const before = (await until(0)).length;
    await h.put({ epoch: 1, sequence: 3, resources: [] }, { seed: (await newOperatorKey()).seed });
    const reports = await until(before + 1);
    expect(reports.at(-1)).toMatchObject({ trigger: 'delivery', outcome: 'refused' });
    const last = reports.at(-1)!.sequence;
    const deliveriesConverged = reports.filter((r) => r.trigger === 'delivery' && r.outcome === 'converged').length;

    // Over HTTP: once the last report is acknowledged the outbox is empty.
    let scraped: Map<string, number>;
    const deadline = Date.now() + 20_000;
    for (;;) {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      scraped = samples(await res.text());
      if (value(scraped, 'mesh_host_outbox_reports') === 0 && value(scraped, 'mesh_host_last_report_sequence') === last) break;
      if (Date.now() > deadline) throw new Error(`the scrape never showed the last report acknowledged: ${JSON.stringify([...scraped])}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(value(scraped, 'mesh_host_applies_total', { trigger: 'delivery', outcome: 'converged' })).toBe(deliveriesConverged);
    expect(value(scraped, 'mesh_host_refusals', { kind: 'forged' })).toBe(1);
    expect(value(scraped, 'mesh_host_link_up')).toBe(1);
    expect(value(scraped, 'mesh_host_apply_duration_seconds_count', { trigger: 'delivery' })).toBe(deliveriesConverged);
    expect(value(scraped, 'mesh_host_last_report_timestamp_seconds')).toBeCloseTo(Date.parse(reports.at(-1)!.finishedAt) / 1000, 0);
    // The age of that report: not below zero, and no older than the time since it finished (read after the scrape).
    expect(value(scraped, 'mesh_host_last_report_age_seconds')).toBeGreaterThanOrEqual(0);
    expect(value(scraped, 'mesh_host_last_report_age_seconds')).toBeLessThanOrEqual((Date.now() - Date.parse(reports.at(-1)!.finishedAt)) / 1000 + 1);
    expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);

    // A file edited by hand: the watcher's drift, the reconcile it asked for, counted as the reports say.
    writeFileSync(join(h.root, 'srv/app/app.conf'), 'edited by hand\n');
    await h.waitForReport('saying the drift', (r) => r.said.includes('drift: /srv/app/app.conf content changed'), 30_000);
    const all = await h.reports();
    const driftSaid = all.flatMap((r) => r.said).filter((line) => line.startsWith('drift: ')).length;
    const reconciles = all.filter((r) => r.trigger === 'reconcile' && r.outcome === 'converged').length;
    const lastNow = all.at(-1)!.sequence;
    for (const until = Date.now() + 20_000; ; await new Promise((r) => setTimeout(r, 100))) {
      scraped = samples(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
      // The report is saved before the apply that made it is counted: wait for both.
      if (value(scraped, 'mesh_host_last_report_sequence') === lastNow && (value(scraped, 'mesh_host_applies_total', { trigger: 'reconcile', outcome: 'converged' }) ?? 0) >= reconciles) break;
      if (Date.now() > until) throw new Error(`the scrape never showed report ${lastNow}: ${JSON.stringify([...scraped])}`);
    }
    expect(value(scraped, 'mesh_host_drift_found_total', { kind: 'path' })).toBe(driftSaid);
    // Every reconcile that reported is counted; the watcher may have asked for one more (the hand edit
    // heard twice), which found nothing to do and made no report: an apply all the same.
    expect(value(scraped, 'mesh_host_applies_total', { trigger: 'reconcile', outcome: 'converged' })).toBeGreaterThanOrEqual(reconciles);
    expect(reconciles).toBeGreaterThanOrEqual(1);
    expect(value(scraped, 'mesh_host_drift_found_total', { kind: 'unit' }) ?? 0).toBe(0);

    // The textfile: written whole after every apply and refusal, the same names, the node as a label.
    await new Promise<void>((resolve, reject) => {
      const until = Date.now() + 20_000;
      const look = () => (existsSync(file) && value(samples(readFileSync(file, 'utf8')), 'mesh_host_last_report_sequence') === lastNow ? resolve() : Date.now() > until ? reject(new Error('the textfile never said the last report')) : setTimeout(look, 100));
      look();
    });
    const text = readFileSync(file, 'utf8');
    const fromFile = samples(text);
    expect(value(fromFile, 'mesh_host_applies_total', { trigger: 'delivery', outcome: 'converged' })).toBe(deliveriesConverged);
    expect(value(fromFile, 'mesh_host_refusals', { kind: 'forged' })).toBe(1);
    expect(value(fromFile, 'mesh_host_drift_found_total', { kind: 'path' })).toBe(driftSaid);
    expect(value(fromFile, 'mesh_host_applies_total', { trigger: 'reconcile', outcome: 'converged' })).toBeGreaterThanOrEqual(reconciles);
    expect(value(fromFile, 'mesh_host_last_report_sequence')).toBe(lastNow);
    expect(text).toContain(`node="${h.node}"`);
    expect(readdirTemporaries(join(h.dir, 'textfile'))).toEqual([]);
  }, 240_000);
});

function readdirTemporaries(dir: string): string[] {
  return readdirSync(dir).filter((n) => n !== 'mesh-host.prom');
}
