import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { heartbeatSubject } from '../../src/link/wire.js';
import type { FleetRow } from '../../src/control/fleet/fleet.js';
import type { Pause } from '../../machines/pause.js';
import { runCli } from '../support/cli.js';
import { control, type HostFixture } from '../support/daemon.js';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';

const unavailable = natsUnavailable();

/** A node's heartbeats as they cross the wire: `next(what, match)` resolves on the first one to come after the call that matches. */
async function heartbeats(nc: NatsConnection, node: string) {
  type Beat = { paused: Pause | null };
  const waiting: Array<{ match: (b: Beat) => boolean; resolve: (b: Beat) => void }> = [];
  nc.subscribe(heartbeatSubject(node), {
    callback: (_e, m) => {
      const beat = JSON.parse(m.string()) as Beat;
      for (const w of waiting.splice(0)) {
        if (w.match(beat)) w.resolve(beat);
        else waiting.push(w);
      }
    },
  });
  await nc.flush();
  return (what: string, match: (b: Beat) => boolean, timeoutMs = 30_000) =>
    new Promise<Beat>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no heartbeat ${what} after ${timeoutMs} ms`)), timeoutMs);
      waiting.push({ match, resolve: (b) => (clearTimeout(timer), resolve(b)) });
    });
}

async function hostCli(h: HostFixture, args: string[], env: Record<string, string> = {}) {
  const r = await runCli('mesh-host', [...args, ...h.flags, '--log-level', 'warn'], { timeoutMs: 60_000, env });
  return { ...r, json: () => JSON.parse(r.stdout) as Record<string, unknown> };
}

/** The daemon's own answer to `meshctl status NODE`: its pause, and the lifecycle's state. */
async function daemonStatus(server: string, node: string) {
  const r = await runCli('meshctl', ['status', node, '--server', server, '--json', '--log-level', 'warn']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { paused: Pause | null; state: { serving?: { worker: unknown; pause: unknown } } };
}

describe.skipIf(unavailable !== undefined && !process.env.CI)(`a host paused by hand, on a real daemon and a real nats-server${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const mesh = useMesh();

  it('keeps what the mesh sends while paused and applies only the newest, at once, on resume; status, heartbeat and the fleet view say it', async () => {
    const h = await mesh.enrol({ config: { heartbeatMs: 500 } });
    await h.waitForReports(1);
    const nc = await control([mesh.server.url]);
    const beat = await heartbeats(nc, h.node);

    const paused = await hostCli(h, ['pause', '--reason', 'replacing a disk', '--json'], { SUDO_USER: 'alice' });
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.json()).toMatchObject({ paused: { reason: 'replacing a disk', by: 'alice' }, replaced: null });
    await h.waitForLog('the pause heard', /the host is paused/);
    expect((await beat('saying paused', (b) => b.paused !== null)).paused).toMatchObject({ reason: 'replacing a disk', by: 'alice' });

    await h.put({ epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'a', path: '/srv/a' }] });
    await h.put({ epoch: 1, sequence: 3, resources: [{ type: 'directory', id: 'b', path: '/srv/b' }] });
    // The host hears its key by notices and reads the newest value, so two puts close together may be one read:
    // what must be kept is the newest, whichever notice brought it.
    await h.waitForLog('the newest delivery kept', /"sequence":3,[^\n]*delivery kept and enqueued/);
    // Kept, and the worker idle: had the host not stood aside, the apply would have begun as the delivery was kept.
    const status = await daemonStatus(mesh.server.url, h.node);
    expect(status.paused).toMatchObject({ reason: 'replacing a disk', by: 'alice' });
    expect(status.state.serving).toMatchObject({ worker: 'idle', pause: 'paused' });
    expect(JSON.parse(Buffer.from(JSON.parse(readFileSync(join(h.state, 'declared.json'), 'utf8')).payload, 'base64').toString())).toMatchObject({ sequence: 3 });
    expect(existsSync(join(h.root, 'srv/b'))).toBe(false);
    expect((await h.reports()).length).toBe(1);

    const local = await hostCli(h, ['status', '--json']);
    expect(local.json().paused).toMatchObject({ reason: 'replacing a disk', by: 'alice' });
    const view = await runCli('meshctl', ['status', '--server', mesh.server.url, '--json', '--log-level', 'warn']);
    const row = (JSON.parse(view.stdout) as { nodes: FleetRow[] }).nodes.find((r) => r.node === h.node)!;
    expect(row).toMatchObject({ state: 'paused', paused: { reason: 'replacing a disk', by: 'alice' } });
    const text = await runCli('meshctl', ['status', '--server', mesh.server.url, '--log-level', 'warn']);
    expect(text.stdout).toMatch(new RegExp(`${h.node}\\s+\\S+\\s+paused`));
    expect(text.stdout).toContain('paused by alice since');
    // A paused node was paused on purpose: the view's check does not fail for it.
    expect(view.code).toBe(0);

    // Applying by hand is refused while paused: the pause is the operator's word.
    const reconcile = await hostCli(h, ['reconcile']);
    expect(reconcile.code).toBe(3);
    expect(reconcile.stderr).toContain('paused by alice');

    const resumed = await hostCli(h, ['resume', '--json']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.json()).toMatchObject({ resumed: true, was: { reason: 'replacing a disk' } });
    const applied = await h.waitForReport('of the newest delivery', (r) => r.trigger === 'delivery');
    expect(applied).toMatchObject({ outcome: 'converged', declaration: { sequence: 3 } });
    expect((await h.reports()).map((r) => [r.trigger, r.declaration?.sequence])).toEqual([['genesis', 1], ['delivery', 3]]);
    expect(existsSync(join(h.root, 'srv/b'))).toBe(true);
    // The daemon beats at once when the pause changes: a beat saying none follows the resume.
    await beat('saying no pause after the resume', (b) => b.paused === null);
    await nc.close();
  });

  it('a pause saved while the daemon is down holds at its start; --for ends it by itself, and what waited is applied', async () => {
    const h = await mesh.enrol();
    await h.waitForReports(1);
    expect(await h.stop()).toBe(0);
    const asked = await hostCli(h, ['pause', '--reason', 'kernel upgrade', '--json'], { USER: 'bob', SUDO_USER: '' });
    expect(asked.code, asked.stderr).toBe(0);
    await h.start();
    await h.put({ epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'a', path: '/srv/a' }] });
    await h.waitForLog('the delivery kept', /delivery kept and enqueued/);
    expect((await daemonStatus(mesh.server.url, h.node)).state.serving).toMatchObject({ worker: 'idle', pause: 'paused' });
    expect((await daemonStatus(mesh.server.url, h.node)).paused).toMatchObject({ reason: 'kernel upgrade', by: 'bob' });

    // Asked again with an end: it replaces the pause standing, and ends by itself.
    const again = await hostCli(h, ['pause', '--reason', 'kernel upgrade, rebooting', '--for', '8s', '--json'], { USER: 'bob', SUDO_USER: '' });
    expect(again.code, again.stderr).toBe(0);
    const until = (again.json().paused as Pause).until!;
    expect(again.json().replaced).toMatchObject({ reason: 'kernel upgrade' });
    const applied = await h.waitForReport('of the delivery, once the pause ended', (r) => r.trigger === 'delivery', 60_000);
    expect(applied).toMatchObject({ outcome: 'converged', declaration: { sequence: 2 } });
    expect(Date.parse(applied.startedAt)).toBeGreaterThanOrEqual(Date.parse(until) - 50);
    const local = await hostCli(h, ['status', '--json']);
    expect(local.json().paused).toBeNull();
    // The apply's save took the ended pause out of the store.
    expect(JSON.parse(readFileSync(join(h.state, 'state.json'), 'utf8')).pause).toBeUndefined();
  });

  it('refuses a pause without a reason, or with an end too far for a timer, touching nothing', async () => {
    const h = await mesh.enrol({ start: false });
    const before = readFileSync(join(h.state, 'state.json'), 'utf8');
    const bare = await hostCli(h, ['pause']);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('--reason');
    const far = await hostCli(h, ['pause', '--reason', 'x', '--for', '30d']);
    expect(far.code).toBe(2);
    expect(far.stderr).toContain('at most 24d');
    expect(readFileSync(join(h.state, 'state.json'), 'utf8')).toBe(before);
    const resume = await hostCli(h, ['resume']);
    expect(resume.code, resume.stderr).toBe(0);
    expect(resume.stdout).toContain('not paused');
  });
});
