import { describe, expect, it } from 'vitest';
import { natsUnavailable } from '../support/nats.js';
import { openrcUnavailable, startOpenrcContainer } from '../support/openrc-tree.js';
import { useReleaseRig } from './rig.js';
import { selfUpdateScenario } from './self-update.js';

/**
 * The release on Debian's real OpenRC, in a container over a Debian tree that has no node at all:
 * installed from the single executable (the inventory finds OpenRC, the installer writes its script,
 * supervise-daemon runs the launcher), and the self-update scenario.
 */
const unavailable = openrcUnavailable() ?? natsUnavailable();

describe.skipIf(unavailable !== undefined && !process.env.CI)(`the release on a real OpenRC${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const rig = useReleaseRig('openrc', (mounts) => startOpenrcContainer({ ...mounts, withoutNode: true, bootTimeoutMs: 180_000 }));

  it('installs, updates on trial, rolls back, stops in a trial, uninstalls', async () => {
    const reports = await selfUpdateScenario({
      ...rig,
      node: 'openrc-node',
      manager: {
        name: 'openrc',
        definition: '/etc/init.d/mesh-host',
        log: async () => (await rig.container.exec('cat', ['/var/log/mesh-host.log'])).stdout,
        stop: () => rig.container.exec('rc-service', ['mesh-host', 'stop'], 150_000),
        stoppedCleanly: async () => /stopped/.test((await rig.container.exec('rc-service', ['mesh-host', 'status'])).stdout),
        afterInstall: async () => {
          expect((await rig.container.exec('cat', ['/etc/init.d/mesh-host'])).stdout).toContain('retry="TERM/120/KILL/5"');
          expect((await rig.container.exec('rc-update', ['show', 'default'])).stdout).toMatch(/mesh-host/);
        },
      },
    });
    expect(reports.filter((r) => r.trigger === 'trial').map((r) => r.outcome)).toEqual(['failed', 'failed']);
  }, 900_000);
});
