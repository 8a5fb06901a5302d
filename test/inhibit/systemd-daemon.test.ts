import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Report } from '../../src/engine/report/report.js';
import { projectDir } from '../support/cli.js';
import type { HostFixture } from '../support/daemon.js';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';
import { useContainer } from '../support/container-block.js';
import { containerUnavailable, startSystemdContainer } from '../support/systemd-container.js';

/**
 * A restart held off by a lock, end to end: a real mesh-host daemon runs inside a real systemd (booted
 * with systemd-nspawn, sharing this machine's loopback, where a real nats-server is) and manages a
 * service whose lock is held by a live process there (a `sleep`, its PID written in the lock), by a dead
 * one, and let go by hand. The unit writes the time it starts, in nanoseconds, so the time from the
 * release to the restart is measured on the machine's own clock.
 */
const unavailable = containerUnavailable() ?? natsUnavailable();
const project = projectDir.replace(/\/$/, '');
const UNIT = 'locked.service';
const LOCK = '/srv/app/busy.lock';
const SERVICE = 'mesh-host-lock';

describe.skipIf(unavailable !== undefined && !process.env.CI)(`a restart held off by a lock, on a real daemon and a real systemd${unavailable ? ` (cannot run: ${unavailable})` : ''}`, { timeout: 300_000 }, () => {
  const mesh = useMesh();
  const box = useContainer();
  const { inside } = box;
  const journal = async () => (await box.container.exec('journalctl', ['-u', SERVICE, '--no-pager', '-o', 'cat'], 60_000)).stdout;
  const reportWhere = async (h: HostFixture, what: string, match: (r: Report) => boolean, timeoutMs = 60_000) => {
    for (const deadline = Date.now() + timeoutMs; ; await new Promise((r) => setTimeout(r, 50))) {
      const found = (await h.reports().catch(() => [] as Report[])).find(match);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no report ${what}; reports: ${JSON.stringify((await h.reports().catch(() => [])).map((r) => [r.sequence, r.trigger, r.said]))}\n${(await journal()).split('\n').slice(-30).join('\n')}`);
    }
  };
  const startDaemon = async (h: HostFixture, connectedTimes: number) => {
    await inside('systemd-run', [`--unit=${SERVICE}`, '--collect', process.execPath, join(project, 'bin/mesh-host'), 'run', ...h.flags, '--log-level', 'debug']);
    for (const deadline = Date.now() + 60_000; (await journal()).split('link: connected').length - 1 < connectedTimes; await new Promise((r) => setTimeout(r, 200))) {
      if (Date.now() > deadline) throw new Error(`the daemon did not connect:\n${await journal()}`);
    }
  };
  /**
   * Stops the daemon's transient unit and waits until systemd has let go of it: `--collect` unloads it
   * after the stop returns, and a loaded machine (two CI runs at once) gave the next `systemd-run` of the
   * same name "already loaded".
   */
  const stopDaemon = async () => {
    await inside('systemctl', ['stop', SERVICE]);
    for (const deadline = Date.now() + 30_000; (await inside('systemctl', ['show', '-p', 'LoadState', '--value', SERVICE])) !== 'not-found'; await new Promise((r) => setTimeout(r, 100))) {
      if (Date.now() > deadline) throw new Error(`${SERVICE} was still loaded 30 s after its stop`);
    }
  };
  /** A live holder inside the container: a sleep, its PID (in the container's PID namespace) written in the lock. */
  const hold = async (root: string) => Number(await inside('/bin/sh', ['-c', `sleep 600 >/dev/null 2>&1 & echo $! > ${root}${LOCK}; cat ${root}${LOCK}`]));
  /** The unit's last start, as it wrote it (ns since the epoch). */
  const startedNs = (root: string) => (existsSync(join(root, 'srv/started')) ? BigInt(readFileSync(join(root, 'srv/started'), 'utf8').trim() || '0') : 0n);
  /** Waits for the unit to start again after `since` and gives how long after the release (ms, the machine's clock). */
  const restartedAfter = async (root: string, releasedNs: bigint) => {
    for (const deadline = Date.now() + 30_000; startedNs(root) < releasedNs; await new Promise((r) => setTimeout(r, 20))) {
      if (Date.now() > deadline) throw new Error(`${UNIT} was not restarted after the release:\n${(await journal()).split('\n').slice(-30).join('\n')}`);
    }
    return Number(startedNs(root) - releasedNs) / 1e6;
  };
  const nowNs = () => BigInt(Date.now()) * 1_000_000n;

  it('a live holder defers the restart (every other change made), across a restart of the daemon; the lock removed, then its holder killed, each restart the unit within 2 s; a dead holder is ignored; a lock never let go is passed after inhibitMaxMs', async () => {
    const h = await mesh.enrol({ start: false });
    await box.start(() => startSystemdContainer({ binds: [project, h.dir] }));
    await inside('/bin/sh', ['-c', `printf '[Unit]\\nDescription=locked\\n[Service]\\nExecStart=/bin/sh -c "date +%%%%s%%%%N > ${h.root}/srv/started; exec sleep infinity"\\n' > /etc/systemd/system/${UNIT} && systemctl daemon-reload`]);
    await startDaemon(h, 1);
    const declaration = (content: string, sequence: number, inhibitMaxMs?: number) => ({
      epoch: 1,
      sequence,
      resources: [
        { type: 'directory', id: 'app', path: '/srv/app' },
        { type: 'file', id: 'conf', path: '/srv/app/app.conf', content },
        { type: 'file', id: 'other', path: '/srv/app/other.conf', content },
        { type: 'service', id: 'locked', unit: UNIT, state: 'running', restartOn: ['conf'], inhibitWhile: LOCK, ...(inhibitMaxMs ? { inhibitMaxMs } : {}) },
      ],
    });
    await h.put(declaration('v = 1\n', 2));
    await reportWhere(h, 'of sequence 2 converged', (r) => r.declaration?.sequence === 2 && r.outcome === 'converged');
    const firstStart = startedNs(h.root);

    // Held by a live process: the files change, the restart waits, typed in the report.
    const holder = await hold(h.root);
    await h.put(declaration('v = 2\n', 3));
    const deferred = await reportWhere(h, 'of sequence 3', (r) => r.declaration?.sequence === 3);
    expect(deferred.outcome).toBe('converged');
    expect(deferred.steps.filter((s) => s.resource === 'conf' || s.resource === 'other').map((s) => s.status)).toEqual(['done', 'done']);
    const step = deferred.steps.find((s) => s.resource === 'locked')!;
    expect(step).toMatchObject({ status: 'deferred', actions: ['restart (conf changed)'], lock: { state: 'held', path: LOCK, pid: holder } });
    expect(step.detail).toMatch(new RegExp(`^deferred: locked by PID ${holder} since `));
    expect(readFileSync(join(h.root, 'srv/app/other.conf'), 'utf8')).toBe('v = 2\n');
    expect(startedNs(h.root)).toBe(firstStart);
    const status = JSON.parse(await inside(process.execPath, [join(project, 'bin/mesh-host'), 'status', '--json', ...h.flags, '--log-level', 'warn'])) as { deferred: unknown[] };
    expect(status.deferred).toEqual([{ id: 'locked', target: UNIT, lock: LOCK, pid: holder, since: step.lock!.state === 'held' ? step.lock!.waitingSince : '', until: expect.any(String), because: ['conf'] }]);

    // The daemon restarted while the restart waits: the store keeps it, the new daemon watches the lock.
    await stopDaemon();
    await startDaemon(h, 2);
    expect(startedNs(h.root)).toBe(firstStart);
    const released = nowNs();
    rmSync(join(h.root, LOCK));
    const removedMs = await restartedAfter(h.root, released);
    const done = await reportWhere(h, 'saying the lock was released', (r) => r.said.some((s) => s.startsWith(`lock: ${LOCK} of locked was released (its file is gone)`)));
    expect(done.steps.find((s) => s.resource === 'locked')).toMatchObject({ status: 'done', lock: { state: 'released', path: LOCK } });
    expect(removedMs).toBeLessThan(2000);

    // Held again, then its holder killed: the lock's file stays, its holder is dead.
    const second = await hold(h.root);
    await h.put(declaration('v = 3\n', 4));
    expect((await reportWhere(h, 'of sequence 4', (r) => r.declaration?.sequence === 4)).steps.find((s) => s.resource === 'locked')).toMatchObject({ status: 'deferred', lock: { pid: second } });
    const killed = nowNs();
    await inside('kill', ['-9', String(second)]);
    const killedMs = await restartedAfter(h.root, killed);
    await reportWhere(h, 'saying the holder died', (r) => r.said.some((s) => s.startsWith(`lock: ${LOCK} of locked was released (its holder is dead)`)));
    expect(killedMs).toBeLessThan(2000);

    // A lock whose holder was dead before the apply: ignored at once, and said.
    const dead = Number(await inside('/bin/sh', ['-c', 'echo $$']));
    writeFileSync(join(h.root, LOCK), `${dead}\n`);
    const before = startedNs(h.root);
    await h.put(declaration('v = 4\n', 5));
    const stale = await reportWhere(h, 'of sequence 5', (r) => r.declaration?.sequence === 5);
    expect(stale.steps.find((s) => s.resource === 'locked')).toMatchObject({ status: 'done', lock: { state: 'stale', pid: dead, why: 'dead' } });
    expect(startedNs(h.root)).toBeGreaterThan(before);

    // Held and never let go: past inhibitMaxMs the daemon's own timer asks for the apply, which restarts anyway.
    const stubborn = await hold(h.root);
    await h.put(declaration('v = 5\n', 6, 3000));
    const held = await reportWhere(h, 'of sequence 6', (r) => r.declaration?.sequence === 6);
    const heldStep = held.steps.find((s) => s.resource === 'locked')!;
    expect(heldStep).toMatchObject({ status: 'deferred', lock: { state: 'held', pid: stubborn } });
    const heldSince = BigInt(Date.parse(heldStep.lock!.state === 'held' ? heldStep.lock!.waitingSince : '')) * 1_000_000n;
    const overdueMs = await restartedAfter(h.root, heldSince);
    const overdue = await reportWhere(h, 'saying the bound ran out', (r) => r.said.some((s) => s.includes('reached its inhibitMaxMs')));
    expect(overdue.steps.find((s) => s.resource === 'locked')).toMatchObject({ status: 'done', lock: { state: 'overdue', pid: stubborn, maxMs: 3000 } });
    expect(overdueMs).toBeGreaterThanOrEqual(3000);
    console.log(`a restart held off by a lock, on a real systemd: done ${removedMs.toFixed(0)} ms after the lock file was removed, ${killedMs.toFixed(0)} ms after its holder was killed (bound: 2000 ms); held past inhibitMaxMs 3000, done ${overdueMs.toFixed(0)} ms after it was first held off`);
    await inside('systemctl', ['stop', SERVICE]);
  });
});
