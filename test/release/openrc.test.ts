import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NatsServer, natsUnavailable } from '../support/nats.js';
import { openrcUnavailable, startOpenrcContainer } from '../support/openrc-tree.js';
import type { SystemdContainer } from '../support/systemd-container.js';
import { scratch } from '../support/tree.js';
import { buildFolders, scenarioBuilds, selfUpdateScenario, type Scenario } from './self-update.js';

/**
 * The release on Debian's real OpenRC, in a container over a Debian tree that has no node at all:
 * installed from the single executable (the inventory finds OpenRC, the installer writes its script,
 * supervise-daemon runs the launcher), and the self-update scenario.
 */
const unavailable = openrcUnavailable() ?? natsUnavailable();

describe.skipIf(unavailable !== undefined && !process.env.CI)(`the release on a real OpenRC${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let container: SystemdContainer;
  let server: NatsServer;
  let work: ReturnType<typeof scratch>;
  let builds: Scenario['builds'];

  beforeAll(async () => {
    builds = scenarioBuilds();
    work = scratch('mesh-host-release-openrc-');
    server = await NatsServer.start();
    container = await startOpenrcContainer({ binds: [work.dir], readOnlyBinds: buildFolders(builds), withoutNode: true, bootTimeoutMs: 180_000 });
  }, 900_000);
  afterAll(async () => {
    await container?.stop();
    await server?.stop();
    work?.cleanup();
  });

  it('installs, updates on trial, rolls back, stops in a trial, uninstalls', async () => {
    const reports = await selfUpdateScenario({
      container,
      server,
      work: work.dir,
      builds,
      node: 'openrc-node',
      manager: {
        name: 'openrc',
        definition: '/etc/init.d/mesh-host',
        log: async () => (await container.exec('cat', ['/var/log/mesh-host.log'])).stdout,
        stop: () => container.exec('rc-service', ['mesh-host', 'stop'], 150_000),
        stoppedCleanly: async () => /stopped/.test((await container.exec('rc-service', ['mesh-host', 'status'])).stdout),
        afterInstall: async () => {
          expect((await container.exec('cat', ['/etc/init.d/mesh-host'])).stdout).toContain('retry="TERM/120/KILL/5"');
          expect((await container.exec('rc-update', ['show', 'default'])).stdout).toMatch(/mesh-host/);
        },
      },
    });
    expect(reports.filter((r) => r.trigger === 'trial').map((r) => r.outcome)).toEqual(['failed', 'failed']);
  }, 900_000);
});
