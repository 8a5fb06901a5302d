import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { pauseAt, pauseOrderAt, type Pause } from '../../machines/pause.js';
import { FleetFeed } from '../../src/control/serve/feed.js';
import type { PageRow } from '../../src/control/page/page-wire.js';
import { ensureWire } from '../../src/link/control.js';
import { heartbeatSubject } from '../../src/link/wire.js';
import { silentLogger } from '../../src/core/system/log.js';
import { NatsServer } from '../support/nats.js';
import { runCli } from '../support/cli.js';
import { scratchFolders } from '../support/tree.js';

const DAY = 24 * 3600 * 1000;
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

/**
 * `pause --for` is a duration, stored with a wall-clock end because it must outlive a restart. Its words
 * are "for this long": a step of the wall clock, a day back or a day forward, neither holds it a day
 * longer nor ends it at once. Within the boot it was asked in, the boot clock decides; after a reboot
 * only the wall clock is left (said in the Pause's own words).
 */
describe('a pause --for under a wall clock stepped a day back and forward', () => {
  const folder = scratchFolders(afterEach);

  it('the decision the daemon and the commands make: the boot clock within the boot, the wall clock after a reboot', () => {
    const at = Date.UTC(2026, 11, 7, 12);
    const boot = { bootId: 'b1', ms: 1_000_000 };
    const pause: Pause = { reason: 'r', by: 'alice', since: new Date(at).toISOString(), until: new Date(at + 3_600_000).toISOString(), ends: { bootId: 'b1', ms: boot.ms + 3_600_000 } };
    // Ten minutes later by the boot clock, the wall clock stepped a day forward, then a day back: fifty minutes left either way.
    for (const step of [DAY, -DAY, 0]) {
      const later = { bootId: 'b1', ms: boot.ms + 600_000 };
      expect(pauseAt(pause, at + 600_000 + step, later), `step ${step}`).toBe(pause);
      expect(pauseOrderAt(pause, at + 600_000 + step, later)?.endsInMs, `step ${step}`).toBe(3_000_000);
      // An hour on by the boot clock it has ended, whatever the wall clock says.
      expect(pauseAt(pause, at + 3_600_000 + step, { bootId: 'b1', ms: boot.ms + 3_600_000 }), `step ${step}`).toBeNull();
    }
    // Another boot: the wall clock is all there is.
    expect(pauseAt(pause, at + 600_000, { bootId: 'b2', ms: 5 })).toBe(pause);
    expect(pauseOrderAt(pause, at + 600_000, { bootId: 'b2', ms: 5 })?.endsInMs).toBe(3_000_000);
    expect(pauseAt(pause, at + 3_600_000, { bootId: 'b2', ms: 5 })).toBeNull();
    // A pause saved before the boot clock was kept: the wall clock, as before.
    const { ends: _ends, ...old } = pause;
    expect(pauseAt(old, at + 600_000 + DAY, boot)).toBeNull();
  });

  it.skipIf(!existsSync(LIBFAKETIME) && !process.env.CI)('the real program: a day forward does not end it, a day back does not hold it; apply is refused while it stands', async () => {
    const work = folder();
    const root = join(work, 'root');
    mkdirSync(join(root, 'srv'), { recursive: true });
    let sequence = 0;
    const flags = ['--root', root, '--state-dir', join(work, 'state'), '--config', join(work, 'host.json'), '--log-level', 'error'];
    const declare = () => {
      const file = join(work, `d${++sequence}.json`);
      writeFileSync(file, JSON.stringify({ version: 1, node: hostname(), mode: 'converged', sequence, resources: [{ type: 'directory', id: `d${sequence}`, path: `/srv/d${sequence}` }] }));
      return file;
    };
    // The program's wall clock moved by a day; its boot clock (/proc/uptime) and monotonic clock as they are.
    const stepped = (offset: string) => ({ LD_PRELOAD: LIBFAKETIME, FAKETIME: offset, FAKETIME_DONT_FAKE_MONOTONIC: '1' });
    const paused = async (offset: string) => {
      const r = await runCli('mesh-host', ['status', '--json', ...flags], { env: stepped(offset) });
      expect(r.code, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { paused: Pause | null }).paused;
    };
    expect((await runCli('mesh-host', ['apply', declare(), ...flags])).code).toBe(0);
    // The faked clock is seen by the program (else this test would prove nothing).
    const seen = await runCli('mesh-host', ['pause', '--reason', 'probe', '--json', ...flags], { env: stepped('+1d') });
    expect(Date.parse((JSON.parse(seen.stdout) as { paused: Pause }).paused.since) - Date.now()).toBeGreaterThan(DAY - 60_000);

    const FOR_MS = 4000;
    const asked = performance.now();
    const pause = await runCli('mesh-host', ['pause', '--reason', 'moving racks', '--for', `${FOR_MS / 1000}s`, '--json', ...flags]);
    expect(pause.code, pause.stderr).toBe(0);
    // A day forward at once: the pause stands (by the wall clock alone it would have ended), and an apply is refused.
    expect(await paused('+1d')).toMatchObject({ reason: 'moving racks' });
    const refused = await runCli('mesh-host', ['apply', declare(), ...flags], { env: stepped('+1d') });
    expect(refused.code, refused.stdout + refused.stderr).toBe(3);
    expect(refused.stderr).toContain('moving racks');
    // A day back: it ends when its time is up (by the wall clock alone it would stand a day more).
    while ((await paused('-1d')) !== null) {
      expect(performance.now() - asked, 'the pause ended within its time, not a day later').toBeLessThan(60_000);
    }
    expect(performance.now() - asked, 'not before its time').toBeGreaterThanOrEqual(FOR_MS - 20);
    const after = await runCli('mesh-host', ['apply', declare(), ...flags], { env: stepped('-1d') });
    expect(after.code, after.stdout + after.stderr).toBe(0);
  }, 90_000);
});

/**
 * The page's fleet silence: a node is silent when it has not beaten for three intervals, a duration.
 * The feed's wall clock stepped a day forward does not make a beating node silent; stepped a day back it
 * does not keep a quiet one from turning silent once its three intervals pass on the monotonic clock.
 */
describe('the fleet feed under a wall clock stepped a day back and forward', () => {
  it('a node heard a moment ago is not silent a day "later"; one quiet for three intervals is silent a day "earlier"', async () => {
    const server = await NatsServer.start();
    const nc = await connect({ servers: server.url });
    let feed: FleetFeed | undefined;
    try {
      await ensureWire(nc);
      let wall = Date.now();
      let mono = 0;
      feed = await FleetFeed.start({ nc, now: () => wall, monotonic: () => mono, log: silentLogger(), flushMs: 20, tickMs: 20 });
      // The next row of the node the feed sends after the call (every row it sends is made with the clocks as they are then).
      const nextRow = (node: string, what: string, match: (r: PageRow) => boolean) =>
        new Promise<PageRow>((resolve, reject) => {
          const timer = setTimeout(() => (off(), reject(new Error(`no row ${what}`))), 20_000);
          const off = feed!.onRows((m) => m.rows.filter((r) => r.node === node && match(r)).slice(0, 1).forEach((r) => (clearTimeout(timer), off(), resolve(r))));
        });
      const heard = nextRow('n1', 'heard', (r) => r.heartbeat !== null);
      nc.publish(heartbeatSubject('n1'), JSON.stringify({ node: 'n1', reportSequence: 0, intervalMs: 1000, paused: null, disk: null }));
      expect((await heard).silent).toBe(false);
      // A day forward, no time passed: the row is made again (its beat's instant moves with the wall clock) and is not silent; by a wall-clock age it would be a day quiet.
      const forward = nextRow('n1', 'after a day forward', () => true);
      wall += DAY;
      mono += 10;
      const ahead = await forward;
      expect(ahead.silent, JSON.stringify(ahead.problems)).toBe(false);
      expect(wall - ahead.heartbeat!.atMs).toBe(10);
      // A day back, then four intervals on the monotonic clock: silent; by a wall-clock age it would not be for a day.
      const silent = nextRow('n1', 'silent', (r) => r.silent);
      wall -= 2 * DAY;
      mono += 4000;
      expect((await silent).state).toBe('silent');
    } finally {
      feed?.close();
      await nc.close();
      await server.stop();
    }
  }, 60_000);
});
