import { describe, expect, it } from 'vitest';
import type { Report } from '../../src/engine/report/report.js';
import { projectDir } from '../support/cli.js';
import { useContainer } from '../support/container-block.js';
import type { HostFixture } from '../support/daemon.js';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';
import { openrcUnavailable, startOpenrcContainer } from '../support/openrc-tree.js';

/**
 * The unit watcher end to end on Debian's real OpenRC: a real mesh-host daemon runs inside a container
 * over a Debian tree with OpenRC (sharing this machine's loopback, where a real nats-server is), runs two
 * services there through rc-service, and their processes are killed by hand, by PID. One is supervised
 * (supervise-daemon starts it again: the watcher hears the respawn), one runs on its own (start-stop-daemon:
 * OpenRC still says `started`, the watcher sees its process gone and the reconcile starts it again).
 * The times from the kill to the report are logged, not asserted: a loaded machine must not fail the test.
 */
const unavailable = openrcUnavailable() ?? natsUnavailable();
const project = projectDir.replace(/\/$/, '');
const WAIT_MS = 180_000;

describe.skipIf(unavailable !== undefined && !process.env.CI)(`the unit watcher of a real daemon on a real OpenRC${unavailable ? ` (cannot run: ${unavailable})` : ''}`, { timeout: 900_000 }, () => {
  const mesh = useMesh();
  const box = useContainer();
  const { inside } = box;
  const pidIn = async (file: string) => Number.parseInt(await inside('cat', [file]), 10);
  const alive = async (pid: number) => (await box.container.exec('kill', ['-0', String(pid)])).code === 0;
  /** Init scripts as a package would install them, and OpenRC's dependency tree made again (as the package's scripts would). */
  const install = async (scripts: Record<string, string>) => {
    for (const [name, body] of Object.entries(scripts)) {
      await inside('/bin/sh', ['-c', `printf '%s\\n' '#!/sbin/openrc-run' ${body.split('\n').map((l) => `'${l}'`).join(' ')} > /etc/init.d/${name} && chmod 755 /etc/init.d/${name}`]);
    }
    await inside('rc-update', ['--update']);
  };
  const reportWhere = (h: HostFixture, what: string, match: (r: Report) => boolean) => h.waitForReport(what, match, WAIT_MS);
  /** A kill before the unit watcher's first look after a report would be its baseline: wait until it watches. */
  const unitsWatchedAfter = (h: HostFixture, report: Report) =>
    h.waitForLog(`the units watched after report ${report.sequence}`, new RegExp(`"reportSequence":${report.sequence},"units":\\[[^\\]]*\\],"msg":"watch: the units are watched from here on"`), 1, WAIT_MS);
  const after = (reports: Report[], report: Report) => reports.filter((r) => r.sequence > report.sequence).map((r) => [r.sequence, r.trigger, r.said]);

  it('a supervised daemon killed by hand is heard respawned, a daemon of its own killed by hand is started again; each is reported, named; the apply\'s own restarts trigger nothing', async () => {
    const h = await mesh.enrol({ start: false, config: { serviceManager: 'openrc' } });
    const container = await box.start(() => startOpenrcContainer({ binds: [project, h.dir], bootTimeoutMs: 180_000 }));
    await install({
      supervised: 'command=/bin/sleep\ncommand_args=infinity\nsupervisor=supervise-daemon\npidfile=/run/supervised.pid',
      background: 'command=/bin/sleep\ncommand_args=infinity\ncommand_background=true\npidfile=/run/background.pid',
    });
    // The daemon inside the container, its child: OpenRC's services are the container's; its state and
    // scratch root are the fixture's, bound in.
    await h.start({ via: ['nsenter', '-t', String(container.initPid), '-a'] });

    const declaration = (content: string) => ({
      epoch: 1,
      resources: [
        { type: 'directory', id: 'app', path: '/srv/app' },
        { type: 'file', id: 'conf', path: '/srv/app/app.conf', content },
        { type: 'service', id: 'supervised', unit: 'supervised', state: 'running', restartOn: ['conf'] },
        { type: 'service', id: 'background', unit: 'background', state: 'running', restartOn: ['conf'] },
      ],
    });
    await h.put({ ...declaration('v = 1\n'), sequence: 2 });
    const second = await reportWhere(h, 'of sequence 2', (r) => r.declaration?.sequence === 2);
    expect(second.outcome, JSON.stringify(second)).toBe('converged');
    // The next delivery rewrites the file and restarts both services (restartOn): the apply's own doing.
    await h.put({ ...declaration('v = 2\n'), sequence: 3 });
    const third = await reportWhere(h, 'of sequence 3', (r) => r.declaration?.sequence === 3 && r.trigger === 'delivery');
    expect(third, JSON.stringify(third)).toMatchObject({ outcome: 'converged', steps: expect.arrayContaining([expect.objectContaining({ resource: 'supervised', status: 'done' }), expect.objectContaining({ resource: 'background', status: 'done' })]) });
    await unitsWatchedAfter(h, third);

    // The supervised daemon killed by hand: its supervisor starts it again at once.
    const child = await pidIn('/run/openrc/options/supervised/child_pid');
    const supervisedKilledAt = Date.now();
    await inside('kill', ['-KILL', String(child)]);
    const respawned = await reportWhere(h, 'saying supervised was restarted', (r) => r.said.includes('supervised was restarted by its manager (1 automatic restart)'));
    const supervisedMs = Date.now() - supervisedKilledAt;
    // The positive marker of absence: the report right after the delivery's is the one the kill asked
    // for. Had the delivery's restarts woken the watcher, a reconcile would have spoken in between.
    expect(after(await h.reports(), third)[0]).toEqual([third.sequence + 1, 'reconcile', respawned.said]);
    expect(respawned).toMatchObject({ sequence: third.sequence + 1, outcome: 'converged' });
    const newChild = await pidIn('/run/openrc/options/supervised/child_pid');
    expect(newChild).not.toBe(child);
    expect(await alive(newChild)).toBe(true);
    await unitsWatchedAfter(h, respawned);

    // The daemon of its own killed by hand: OpenRC still says it is started; the watcher sees its
    // process gone, and the reconcile starts it again.
    const pid = await pidIn('/run/background.pid');
    const backgroundKilledAt = Date.now();
    await inside('kill', ['-KILL', String(pid)]);
    const restarted = await reportWhere(h, 'saying background was failed', (r) => r.said.some((s) => s.startsWith('background was failed')));
    const backgroundMs = Date.now() - backgroundKilledAt;
    expect(restarted.said).toContain(`background was failed (crashed (its process ${pid} from /run/background.pid is gone))`);
    expect(after(await h.reports(), respawned)[0]).toEqual([respawned.sequence + 1, 'reconcile', restarted.said]);
    expect(restarted).toMatchObject({ trigger: 'reconcile', outcome: 'converged' });
    expect(restarted.steps).toContainEqual(expect.objectContaining({ resource: 'background', status: 'done', actions: ['start'] }));
    const newPid = await pidIn('/run/background.pid');
    expect(newPid).not.toBe(pid);
    expect(await alive(newPid)).toBe(true);
    expect(await inside('rc-service', ['background', 'status'])).toMatch(/started/);

    // The figures, from the kill to the report in the mesh's stream (polled every 100 ms, so up to that much later).
    console.log(`unit watcher end to end on a real OpenRC: a supervised daemon killed by hand reported after ${supervisedMs} ms, a daemon of its own killed by hand started again and reported after ${backgroundMs} ms (aim: within 5 s)`);
    expect(await h.stop()).toBe(0);
  });
});
