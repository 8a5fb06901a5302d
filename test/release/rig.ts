import { afterAll, beforeAll } from 'vitest';
import { NatsServer } from '../support/nats.js';
import type { SystemdContainer } from '../support/systemd-container.js';
import { scratch } from '../support/tree.js';
import { buildFolders, scenarioBuilds, type Scenario } from './self-update.js';

/** What a release test runs the self-update scenario with, made in the block's beforeAll. */
export type ReleaseRig = Pick<Scenario, 'container' | 'server' | 'work' | 'builds'>;

/**
 * The release tests' setting, for the describe block it is called in: the scenario's builds, a scratch
 * folder, a nats-server on loopback, and the service manager's container, which `start` makes with the
 * scratch folder bound in and the builds' folders bound read-only. All of it is ended after the block.
 */
export function useReleaseRig(name: string, start: (mounts: { binds: string[]; readOnlyBinds: string[] }) => Promise<SystemdContainer>): ReleaseRig {
  let rig: ReleaseRig | undefined;
  let work: ReturnType<typeof scratch> | undefined;
  let server: NatsServer | undefined;
  let container: SystemdContainer | undefined;
  beforeAll(async () => {
    const builds = scenarioBuilds();
    work = scratch(`mesh-host-release-${name}-`);
    server = await NatsServer.start();
    container = await start({ binds: [work.dir], readOnlyBinds: buildFolders(builds) });
    rig = { container, server, work: work.dir, builds };
  }, 900_000);
  afterAll(async () => {
    await container?.stop();
    await server?.stop();
    work?.cleanup();
  });
  const made = () => {
    if (!rig) throw new Error("the release rig is made in the block's beforeAll; read it inside a test");
    return rig;
  };
  return {
    get container() {
      return made().container;
    },
    get server() {
      return made().server;
    },
    get work() {
      return made().work;
    },
    get builds() {
      return made().builds;
    },
  };
}
