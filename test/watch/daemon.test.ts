import { describe, expect, it } from 'vitest';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HostFixture } from '../support/daemon.js';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';
import type { Report } from '../../src/engine/report/report.js';

/** Waits for the first report that matches, whatever came before it (genesis, the bundle's first value). */
async function reportWhere(h: HostFixture, what: string, match: (r: Report) => boolean, timeoutMs = 30_000): Promise<Report> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = (await h.reports().catch(() => [])).find(match);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no report ${what}; reports: ${JSON.stringify((await h.reports()).map((r) => [r.sequence, r.trigger, r.said]))}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const unavailable = natsUnavailable();

describe.skipIf(unavailable !== undefined && !process.env.CI)(`the footprint watcher in a real daemon${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const mesh = useMesh();

  it('a file edited by hand is restored and reported as drift; a file re-moded too; the apply\'s own writes trigger nothing', async () => {
    const h = await mesh.enrol();
    const files = Array.from({ length: 20 }, (_, i) => ({ type: 'file' as const, id: `f${i}`, path: `/srv/app/f${i}.conf`, content: `v = ${i}\n`, mode: '0644' }));
    await h.put({ epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, ...files] });
    await reportWhere(h, 'of sequence 2', (r) => r.declaration?.sequence === 2);
    // The delivery wrote twenty files; the next delivery rewrites them all. Had the watchers heard the
    // apply's own writes, a reconcile would stand between the two deliveries' reports.
    await h.put({ epoch: 1, sequence: 3, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, ...files.map((f) => ({ ...f, content: `${f.content}# again\n` }))] });
    const third = await reportWhere(h, 'of sequence 3', (r) => r.declaration?.sequence === 3 && r.trigger === 'delivery');
    // An edit made before the watchers took their first look after an apply would be their baseline: the
    // report can reach the mesh a moment before they look, so wait until they watch from that report on.
    const watchingAfter = (report: Report) => h.waitForLog(`the watchers after report ${report.sequence}`, new RegExp(`"reportSequence":${report.sequence},"msg":"watch: the footprint is watched from here on"`), 1, 60_000);
    await watchingAfter(third);

    const conf = join(h.root, 'srv/app/f3.conf');
    const editedAt = Date.now();
    writeFileSync(conf, 'edited by hand\n');
    const drift = await reportWhere(h, 'saying the edit', (r) => r.said.includes('drift: /srv/app/f3.conf content changed'));
    const heardAfterMs = Date.now() - editedAt;
    expect(drift).toMatchObject({ trigger: 'reconcile', outcome: 'converged', steps: [expect.objectContaining({ resource: 'f3', status: 'done' })] });
    expect(readFileSync(conf, 'utf8')).toBe('v = 3\n# again\n');
    // Said long before the next reconcile tick (an hour away in this fixture, past the test's bound): the
    // watchers asked for it. How long it took is for the log, not an assertion.
    console.log(`footprint watcher: the edit was reported ${heardAfterMs} ms after it was made`);

    await watchingAfter(drift);
    chmodSync(join(h.root, 'srv/app/f4.conf'), 0o600);
    await reportWhere(h, 'saying the chmod', (r) => r.said.includes('drift: /srv/app/f4.conf mode 0644→0600'));
    expect(statSync(join(h.root, 'srv/app/f4.conf')).mode & 0o777).toBe(0o644);

    // Between the two deliveries, and after them, only the two reconciles the hand edits asked for.
    const all = await h.reports();
    const from = all.findIndex((r) => r.declaration?.sequence === 2);
    expect(all.slice(from).map((r) => [r.trigger, r.declaration?.sequence])).toEqual([['delivery', 2], ['delivery', 3], ['reconcile', 3], ['reconcile', 3]]);
  }, 240_000);
});
