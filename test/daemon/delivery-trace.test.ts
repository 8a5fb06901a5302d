import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TracedDelivery } from '../../bench/delivery-trace.js';
import type { DeliveryStep } from '../../src/core/system/trace.js';
import { projectDir } from '../support/cli.js';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';

const unavailable = natsUnavailable();
/** The marks of a delivery up to its head's rename, in the order the daemon makes them. */
const UP_TO_COMMIT: DeliveryStep[] = ['notice', 'read', 'got', 'verified', 'kept', 'worker', 'locked', 'source', 'planned', 'applied', 'reported', 'outboxed', 'committed'];
/** From the commit on, the worker's end and the sender go side by side, each in its order. */
const WORKER_END: DeliveryStep[] = ['committed', 'saved', 'unlocked', 'done'];
const SENDER: DeliveryStep[] = ['committed', 'sending', 'signed', 'acknowledged', 'removed'];
const STEPS = [...new Set([...UP_TO_COMMIT, ...WORKER_END, ...SENDER])];

describe.skipIf(unavailable !== undefined && !process.env.CI)(`a delivery's marks, on a real daemon and nats-server${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const mesh = useMesh();

  it('the benchmark\'s listener hears every step of each delivery once, in order; the report leaves once its head is renamed and is removed only after the save ended', async () => {
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
    // The first report (the bundle's) is no delivery: its removal is waited for, so that its last marks
    // (acknowledged, removed) cannot be taken for those of the first delivery heard after it.
    const outbox = join(h.state, 'outbox');
    const emptyBy = Date.now() + 20_000;
    const waiting = () => (existsSync(outbox) ? readdirSync(outbox).filter((name) => /^\d+\.json$/.test(name)) : []);
    while (waiting().length > 0 && Date.now() < emptyBy) await new Promise((r) => setTimeout(r, 50));
    expect(waiting()).toEqual([]);
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
      for (const chain of [UP_TO_COMMIT, WORKER_END, SENDER]) {
        const times = chain.map((step) => delivery.at[step]!);
        expect(times.every((t, i) => i === 0 || t >= times[i - 1]!), `${chain.join(' → ')}: ${JSON.stringify(delivery.at)}`).toBe(true);
      }
      // An acknowledged report leaves the outbox only once the head that counts it is durable.
      expect(delivery.at.removed!).toBeGreaterThanOrEqual(delivery.at.saved!);
    }
  });
});
