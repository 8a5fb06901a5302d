import { describe, expect, it } from 'vitest';
import { natsUnavailable } from '../support/nats.js';
import { projectDir } from '../support/cli.js';
import { containerUnavailable, startSystemdContainer } from '../support/systemd-container.js';
import { MEMORY_ENV } from '../../src/host/release/release-units.js';
import { useReleaseRig } from './rig.js';
import { selfUpdateScenario } from './self-update.js';

/**
 * The release on a real systemd booted in a container over a volatile copy of this machine's root,
 * with node masked inside: installed from the single executable, the unit it writes (verified, its
 * stop bound, its memory setting reaching the host), a reload moving the host, a crash restarted, and
 * the self-update scenario. The hosts reach a nats-server on this machine's loopback. This is the one
 * test of the systemd unit.
 */
const unavailable = containerUnavailable() ?? natsUnavailable();

describe.skipIf(unavailable !== undefined && !process.env.CI)(`the release on a real systemd${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const rig = useReleaseRig('systemd', async (mounts) => {
    const container = await startSystemdContainer({ ...mounts, binds: [projectDir.replace(/\/$/, ''), ...mounts.binds], bootTimeoutMs: 180_000 });
    // Node masked inside the container's own mounts: nothing of this machine is touched.
    const masked = await container.exec('mount', ['--bind', '/dev/null', '/usr/bin/node']);
    if (masked.code !== 0) {
      await container.stop();
      throw new Error(`node could not be masked: ${masked.stderr}`);
    }
    return container;
  });

  const show = async (property: string) => (await rig.container.exec('systemctl', ['show', '-p', property, '--value', 'mesh-host.service'])).stdout.trim();
  const journal = async () => (await rig.container.exec('journalctl', ['-u', 'mesh-host', '--no-pager', '-o', 'cat'], 60_000)).stdout;
  const connections = async () => ((await journal()).match(/link: connected/g) ?? []).length;
  /** The host the launcher runs (`mesh-host run`), if one runs. */
  const hostPid = async () => (await rig.container.exec('pgrep', ['-f', '-o', 'releases/.*/mesh-host run'])).stdout.trim() || undefined;
  const until = async (what: string, done: () => Promise<boolean>, timeoutMs = 120_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the journal ends:\n${(await journal()).split('\n').slice(-40).join('\n')}`);
      await new Promise((r) => setTimeout(r, 300));
    }
  };

  it('installs, restarts a crash, updates on trial, rolls back, stops in a trial, uninstalls', async () => {
    const reports = await selfUpdateScenario({
      ...rig,
      node: 'systemd-node',
      manager: {
        name: 'systemd',
        definition: '/etc/systemd/system/mesh-host.service',
        log: journal,
        stop: () => rig.container.exec('systemctl', ['stop', 'mesh-host.service'], 150_000),
        stoppedCleanly: async () => (await show('ActiveState')) === 'inactive' && (await show('Result')) === 'success' && (await journal()).includes('the host ends between applies: the store is quiesced'),
        afterInstall: async () => {
          const analyzed = await rig.container.exec('systemd-analyze', ['verify', '/etc/systemd/system/mesh-host.service']);
          expect(analyzed.stderr).not.toMatch(/mesh-host\.service:\d+:/);
          expect(await show('TimeoutStopUSec')).toBe('2min');
          expect(await show('KillMode')).toBe('mixed');
          // The memory setting reaches the host the launcher runs.
          const host = await hostPid();
          expect((await rig.container.exec('cat', [`/proc/${host}/environ`])).stdout.split('\0')).toEqual(expect.arrayContaining(MEMORY_ENV));

          // systemctl reload: SIGHUP to the launcher, passed to its host, which moves onto its bus again
          // between applies; neither process is replaced.
          const launcher = await show('MainPID');
          const connected = await connections();
          expect((await rig.container.exec('systemctl', ['reload', 'mesh-host.service'])).code).toBe(0);
          await until('the move', async () => (await connections()) > connected);
          expect(await show('MainPID')).toBe(launcher);
          expect(await hostPid()).toBe(host);

          // A crash, once the service runs with its host: systemd
          // starts it again, and it connects again.
          await until('the service running its host', async () => (await show('SubState')) === 'running' && (await hostPid()) !== undefined);
          const restarts = Number(await show('NRestarts'));
          const before = await connections();
          // The launcher killed, as a crash or the OOM killer would (its host ends with it, and systemd
          // cleans up the rest): not through `systemctl kill`, whose walk of the unit's control group at
          // times fails with EIO inside the container.
          const killed = await rig.container.exec('kill', ['-KILL', launcher]);
          expect(killed.code, killed.stderr).toBe(0);
          await until('the restart after the crash', async () => Number(await show('NRestarts')) === restarts + 1 && (await show('SubState')) === 'running' && (await connections()) > before);
          expect(await show('MainPID')).not.toBe(launcher);
        },
      },
    });
    expect(reports.filter((r) => r.trigger === 'trial').map((r) => r.outcome)).toEqual(['failed', 'failed']);
  }, 900_000);
});
