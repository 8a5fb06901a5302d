import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { enrolledHost, type HostFixture } from '../support/daemon.js';
import { NatsServer, natsUnavailable } from '../support/nats.js';

const unavailable = natsUnavailable();

describe.skipIf(unavailable !== undefined && !process.env.CI)(`the footprint watcher in a real daemon${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let server: NatsServer;
  const hosts: HostFixture[] = [];
  beforeAll(async () => {
    server = await NatsServer.start();
  });
  afterEach(async () => {
    for (const h of hosts.splice(0)) await h.cleanup();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('a file edited by hand is restored and reported as drift; a file re-moded too; the apply\'s own writes trigger nothing', async () => {
    const h = await enrolledHost([server.url]);
    hosts.push(h);
    await h.start();
    const files = Array.from({ length: 20 }, (_, i) => ({ type: 'file' as const, id: `f${i}`, path: `/srv/app/f${i}.conf`, content: `v = ${i}\n`, mode: '0644' }));
    await h.put({ epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, ...files] });
    await h.waitForReports(2);
    // The delivery wrote twenty files; the next delivery rewrites them all. Had the watchers heard the
    // apply's own writes, a reconcile would stand between the two deliveries' reports.
    await h.put({ epoch: 1, sequence: 3, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, ...files.map((f) => ({ ...f, content: `${f.content}# again\n` }))] });
    await h.waitForReports(3);

    const conf = join(h.root, 'srv/app/f3.conf');
    const editedAt = Date.now();
    writeFileSync(conf, 'edited by hand\n');
    const drift = await h.waitForReports(4);
    const heardAfterMs = Date.now() - editedAt;
    expect(drift[3]).toMatchObject({ trigger: 'reconcile', outcome: 'converged' });
    expect(drift[3]!.said).toContain('drift: /srv/app/f3.conf content changed');
    expect(readFileSync(conf, 'utf8')).toBe('v = 3\n# again\n');
    // Said within seconds, not at the next reconcile tick (an hour away in this fixture).
    expect(heardAfterMs).toBeLessThan(30_000);

    chmodSync(join(h.root, 'srv/app/f4.conf'), 0o600);
    const moded = await h.waitForReports(5);
    expect(moded[4]!.said).toContain('drift: /srv/app/f4.conf mode 0644→0600');
    expect(statSync(join(h.root, 'srv/app/f4.conf')).mode & 0o777).toBe(0o644);

    const all = await h.reports();
    expect(all.map((r) => r.trigger)).toEqual(['genesis', 'delivery', 'delivery', 'reconcile', 'reconcile']);
  }, 120_000);
});
