import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { enrolledHost, type HostFixture } from '../support/daemon.js';
import { natsUnavailable, startCluster, type NatsServer } from '../support/nats.js';

const unavailable = natsUnavailable();
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(unavailable !== undefined && !process.env.CI)(`a three-server cluster${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let servers: NatsServer[];
  let h: HostFixture | undefined;
  beforeAll(async () => {
    servers = await startCluster();
  });
  afterAll(async () => {
    await h?.cleanup();
    for (const s of servers ?? []) await s.stop();
  });

  it("the host's server killed: the host fails over, and the next delivery applies and reports", async () => {
    // JetStream in a cluster needs its meta leader elected: the control side retries until it is.
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        h = await enrolledHost(servers.map((s) => s.url), { replicas: 3, config: { rereadMs: 2000 } });
        break;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await wait(500);
      }
    }
    await h.start();
    await h.waitForReports(1);
    const port = Number(/"server":"127\.0\.0\.1:(\d+)"[^\n]*link: connected/.exec(h.log())![1]);
    const mine = servers.find((s) => s.port === port)!;
    await mine.kill();
    while (!h.log().includes('link: reconnected') && Date.now() < deadline + 30_000) await wait(100);
    let put = false;
    while (!put) {
      try {
        await h.put({ epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'directory', id: 'after', path: '/srv/after' }] });
        put = true;
      } catch {
        await wait(300);
      }
    }
    const reports = await h.waitForReports(2, 30_000);
    expect(reports.map((r) => [r.sequence, r.trigger, r.outcome])).toEqual([[1, 'genesis', 'converged'], [2, 'delivery', 'converged']]);
    expect(existsSync(join(h.root, 'srv/after'))).toBe(true);
  }, 120_000);
});
