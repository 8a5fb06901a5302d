import { describe, expect, it } from 'vitest';
import type { Report } from '../../src/engine/report/report.js';
import type { HostFixture } from '../support/daemon.js';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';
import { container, skip, unavailable, useContainerScene } from './scene.js';

const natsMissing = natsUnavailable();

/**
 * The container watcher end to end: a real mesh-host daemon (on this machine, the engine's socket in its
 * configuration) runs a container on podman, and the container is killed by hand. The time from the kill
 * to the report is logged, not asserted.
 */
describe.skipIf(skip || (natsMissing !== undefined && !process.env.CI))(`the container watcher of a real daemon${unavailable ?? natsMissing ? ` (cannot run: ${unavailable ?? natsMissing})` : ''}`, () => {
  const scene = useContainerScene();
  const mesh = useMesh();
  const reportWhere = async (h: HostFixture, what: string, match: (r: Report) => boolean, timeoutMs = 60_000) => {
    for (const deadline = Date.now() + timeoutMs; ; await new Promise((r) => setTimeout(r, 50))) {
      const reports = await h.reports().catch(() => [] as Report[]);
      const found = reports.find(match);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no report ${what}; reports: ${JSON.stringify(reports.map((r) => [r.sequence, r.trigger, r.said, r.error]))}`);
    }
  };

  it('a container killed by hand is started again and reported; the apply\'s own replacement triggers nothing', async () => {
    const ref = await scene.podman.pushImage('watched');
    const h = await mesh.enrol({ config: { containerSocket: scene.podman.socket, verifyPauseMs: 500 } });
    await h.put({ epoch: 1, sequence: 2, resources: [container({ ref }, { env: { V: '1' } })] });
    await reportWhere(h, 'of sequence 2 converged', (r) => r.declaration?.sequence === 2 && r.outcome === 'converged');
    // A replacement is the apply's own stop and removal: the engine's die and destroy are not news.
    await h.put({ epoch: 1, sequence: 3, resources: [container({ ref }, { env: { V: '2' } })] });
    const third = await reportWhere(h, 'of sequence 3', (r) => r.declaration?.sequence === 3 && r.trigger === 'delivery');
    expect(third).toMatchObject({ outcome: 'converged', steps: [expect.objectContaining({ actions: ['replace (env differs)', 'start'] })] });

    const killedAt = Date.now();
    await scene.podman.podman(['kill', '-s', 'KILL', 'web']);
    const repaired = await reportWhere(h, 'saying the container died', (r) => r.said.some((s) => s.startsWith('container web died')));
    console.log(`container killed by hand: reported and started again ${Date.now() - killedAt} ms later`);
    expect(repaired).toMatchObject({ trigger: 'reconcile', outcome: 'converged', sequence: third.sequence + 1 });
    expect(repaired.steps).toContainEqual(expect.objectContaining({ resource: 'web', actions: ['start'], status: 'done' }));
    expect(await scene.inspect('web', '{{.State.Status}}')).toBe('running');
  });
});
