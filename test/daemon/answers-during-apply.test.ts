import { describe, expect, it } from 'vitest';
import type { Resource } from '../../src/core/declaration/schema.js';
import { heartbeatSubject, inventorySubject, statusSubject } from '../../src/link/wire.js';
import { control } from '../support/daemon.js';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';

const unavailable = natsUnavailable();

/** What the control side heard from the host, in the order it arrived (one connection: the order the host sent it). */
type Heard = { kind: 'status'; applying: boolean; applied: number | undefined } | { kind: 'inventory' } | { kind: 'heartbeat' };

const applyingIn = (state: unknown) => typeof state === 'object' && state !== null && JSON.stringify(state).includes('"applying"');

describe.skipIf(unavailable !== undefined && !process.env.CI)(`the daemon answers while it applies${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const mesh = useMesh();

  it('status and inventory requests are answered and heartbeats go out during a long apply, as the daemon itself says it is applying', async () => {
    const h = await mesh.enrol({ config: { heartbeatMs: 50 } });
    await h.waitForReports(1);
    const nc = await control([mesh.server.url]);
    try {
      const heard: Heard[] = [];
      const beats = nc.subscribe(heartbeatSubject(h.node), { callback: () => void heard.push({ kind: 'heartbeat' }) });
      const resources: Resource[] = [{ type: 'directory', id: 'a', path: '/srv/a' }];
      for (let d = 0; d < 10; d++) resources.push({ type: 'directory', id: `d${d}`, path: `/srv/a/${d}` });
      for (let i = 0; i < 3000; i++) resources.push({ type: 'file', id: `f${i}`, path: `/srv/a/${i % 10}/${i}`, content: `${i}\n` });
      await h.put({ epoch: 1, sequence: 2, resources });
      // Asked one after another until the host's own status says sequence 2 is applied and it is idle;
      // every reply that says the worker is applying was made during the apply.
      for (;;) {
        const status = (await nc.request(statusSubject(h.node), '', { timeout: 60_000 })).json<{ state: unknown; lastApplied: { sequence: number } | null }>();
        const applying = applyingIn(status.state);
        heard.push({ kind: 'status', applying, applied: status.lastApplied?.sequence });
        if (!applying && status.lastApplied?.sequence === 2) break;
        if (applying) {
          await nc.request(inventorySubject(h.node), '', { timeout: 60_000 });
          heard.push({ kind: 'inventory' });
        }
      }
      beats.unsubscribe();
      const first = heard.findIndex((e) => e.kind === 'status' && e.applying);
      const last = heard.findLastIndex((e) => e.kind === 'status' && e.applying);
      const during = heard.slice(first, last + 1);
      // One apply all along: no idle answer inside the stretch. The store records sequence 2 as applied
      // before the worker is done (its report and second look come after), so the last answers of the
      // stretch may already say 2; never anything else, and never back.
      const statuses = during.flatMap((e) => (e.kind === 'status' ? [e] : []));
      expect(statuses.filter((e) => !e.applying), JSON.stringify(heard)).toEqual([]);
      const marks = statuses.map((e) => e.applied);
      expect(marks.every((m, i) => (m === 1 || m === 2) && (i === 0 || m! >= marks[i - 1]!)), JSON.stringify(marks)).toBe(true);
      expect(marks[0]).toBe(1);
      // Counted, not timed: two answers that say applying bound a stretch of the apply, and inside it an
      // inventory (probes run as processes) was answered and a heartbeat went out. How many fit in depends
      // on the machine's speed, so no more is asked.
      expect(during.filter((e) => e.kind === 'status').length).toBeGreaterThanOrEqual(2);
      expect(during.filter((e) => e.kind === 'inventory').length).toBeGreaterThanOrEqual(1);
      expect(during.filter((e) => e.kind === 'heartbeat').length).toBeGreaterThanOrEqual(1);
      await h.waitForReport('of the apply', (r) => r.declaration?.sequence === 2 && r.outcome === 'converged', 120_000);
    } finally {
      await nc.close();
    }
  }, 240_000);
});
