import { describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { heartbeatSubject } from '../../src/link/wire.js';
import type { FleetRow } from '../../src/control/fleet/fleet.js';
import type { Fault } from '../../src/core/system/errors.js';
import { runCli } from '../support/cli.js';
import { control } from '../support/daemon.js';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';
import { SmallDisk } from '../support/small-disk.js';

const unavailable = natsUnavailable();

/** The next heartbeat of a node, after the call, that matches. */
function nextBeat(nc: NatsConnection, node: string, what: string, match: (disk: Fault | null) => boolean, timeoutMs = 30_000): Promise<Fault | null> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => (sub.unsubscribe(), reject(new Error(`no heartbeat ${what} after ${timeoutMs} ms`))), timeoutMs);
    const sub = nc.subscribe(heartbeatSubject(node), {
      callback: (_e, m) => {
        const { disk } = JSON.parse(m.string()) as { disk: Fault | null };
        if (!match(disk)) return;
        clearTimeout(timer);
        sub.unsubscribe();
        resolve(disk);
      },
    });
  });
}

async function fleetRow(server: string, node: string): Promise<FleetRow> {
  const view = await runCli('meshctl', ['status', '--server', server, '--json', '--log-level', 'warn']);
  return (JSON.parse(view.stdout) as { nodes: FleetRow[] }).nodes.find((r) => r.node === node)!;
}

/**
 * A host whose state directory's disk fills, on a real daemon, a real nats-server and a real small
 * disk: its heartbeat and the fleet view say "disk full" while the directory cannot be written, a
 * delivery then fails without spending a report's number, and once there is room the next delivery
 * converges and its report follows the last one: none lost, none doubled.
 */
describe.skipIf(unavailable !== undefined && !process.env.CI)(`a full disk under the state directory, seen by the fleet${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const mesh = useMesh();

  it('the heartbeat and meshctl status say disk full until there is room; the reports go on in order', async () => {
    const h = await mesh.enrol({ start: false, config: { heartbeatMs: 500 } });
    // The state directory moved onto a small disk of its own, as it was.
    const copy = mkdtempSync(join(tmpdir(), 'mesh-state-'));
    cpSync(h.state, copy, { recursive: true });
    rmSync(h.state, { recursive: true });
    const disk = SmallDisk.mount(h.state, 2048, 400);
    try {
      cpSync(copy, h.state, { recursive: true });
      rmSync(copy, { recursive: true });
      await h.start();
      await h.waitForReports(1);
      const nc = await control([mesh.server.url]);

      const full = nextBeat(nc, h.node, 'saying the disk is full', (d) => d !== null);
      disk.leave(0);
      expect(await full).toEqual({ code: 'ENOSPC', path: h.state });
      const row = await fleetRow(mesh.server.url, h.node);
      expect(row.state).toBe('failed');
      expect(row.disk).toEqual({ code: 'ENOSPC', path: h.state });
      expect(row.problems[0]).toMatch(/^disk full: its state directory .* cannot be written \(ENOSPC\)/);
      const table = await runCli('meshctl', ['status', '--server', mesh.server.url, '--log-level', 'warn']);
      expect(table.stdout).toContain('disk full');

      // A delivery while full: the apply cannot keep its record, and says so in the log; no report number is spent.
      await h.put({ epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'b', path: '/srv/b' }] });
      await h.waitForLog('the failed keeping', /could not be (kept|saved|written)|ENOSPC/);

      const room = nextBeat(nc, h.node, 'saying the disk has room', (d) => d === null);
      disk.release();
      await room;
      expect((await fleetRow(mesh.server.url, h.node)).disk).toBeNull();

      await h.put({ epoch: 1, sequence: 3, resources: [{ type: 'directory', id: 'c', path: '/srv/c' }] });
      await h.waitForReport('converged on sequence 3', (r) => r.declaration?.sequence === 3 && r.outcome === 'converged', 30_000);
      const reports = await h.reports();
      const sequences = reports.map((r) => r.sequence);
      expect(sequences).toEqual(sequences.map((_, i) => i + 1));
      await nc.close();
    } finally {
      await h.stop();
      disk.unmount();
    }
  }, 120_000);
});
