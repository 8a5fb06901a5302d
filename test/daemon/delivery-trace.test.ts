import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TracedDelivery } from '../../bench/delivery-trace.js';
import type { DeliveryStep } from '../../src/system/trace.js';
import { projectDir } from '../support/cli.js';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';

const unavailable = natsUnavailable();
/** Every mark of a delivery that the link benchmark's breakdown reads, in the order the daemon makes them. */
const STEPS: DeliveryStep[] = ['notice', 'read', 'got', 'verified', 'kept', 'worker', 'locked', 'source', 'planned', 'applied', 'reported', 'outboxed', 'saved', 'unlocked', 'done', 'sending', 'signed', 'acknowledged', 'removed'];

describe.skipIf(unavailable !== undefined && !process.env.CI)(`a delivery's marks, on a real daemon and nats-server${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const mesh = useMesh();

  it('the benchmark\'s listener loaded into the daemon hears every step of each delivery once, in order', async () => {
    const listener = join(projectDir, 'dist/bench/delivery-trace.js');
    expect(existsSync(listener), 'npm run build makes dist/bench').toBe(true);
    const h = await mesh.enrol({ start: false, nodeFlags: ['--import', pathToFileURL(listener).href] });
    const file = join(h.dir, 'trace.jsonl');
    process.env.MESH_HOST_TRACE_FILE = file;
    try {
      await h.start();
    } finally {
      delete process.env.MESH_HOST_TRACE_FILE;
    }
    await h.waitForReports(1);
    for (const sequence of [2, 3]) {
      await h.put({ epoch: 1, sequence, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'file', id: 'f', path: '/srv/app/f.conf', content: `v=${sequence}\n` }] });
      await h.waitForReport(`of sequence ${sequence}`, (r) => r.declaration?.sequence === sequence);
    }
    // A line is written once the delivery's report has left the outbox, a moment after it is in the stream.
    const deadline = Date.now() + 20_000;
    const lines = () => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
    while (lines().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const traced = lines().map((line) => JSON.parse(line) as TracedDelivery);
    expect(traced).toHaveLength(2);
    for (const delivery of traced) {
      expect(Object.keys(delivery.at).sort()).toEqual([...STEPS].sort());
      const times = STEPS.map((step) => delivery.at[step]!);
      expect(times.every((t, i) => i === 0 || t >= times[i - 1]!), JSON.stringify(delivery.at)).toBe(true);
    }
  });
});
