import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Report } from '../../src/engine/report/report.js';
import { projectDir } from '../support/cli.js';
import type { HostFixture } from '../support/daemon.js';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';
import { useContainer } from '../support/container-block.js';
import { containerUnavailable, startSystemdContainer } from '../support/systemd-container.js';

/**
 * The watchers end to end: a real mesh-host daemon runs inside a real systemd (booted with
 * systemd-nspawn, sharing this machine's loopback, where a real nats-server is), manages a service
 * there, and is disturbed by hand. What it says reaches the mesh as a report. The times from the act to
 * the report are logged, not asserted (a loaded machine must not fail the test); `npm run bench -- watch`
 * measures the cost.
 */
const unavailable = containerUnavailable() ?? natsUnavailable();
const project = projectDir.replace(/\/$/, '');
const UNIT = 'watched.service';

describe.skipIf(unavailable !== undefined && !process.env.CI)(`the watchers of a real daemon on a real systemd${unavailable ? ` (cannot run: ${unavailable})` : ''}`, { timeout: 300_000 }, () => {
  const mesh = useMesh();
  const box = useContainer();
  const { inside } = box;
  const journal = async () => (await box.container.exec('journalctl', ['-u', 'mesh-host-watch', '--no-pager', '-o', 'cat'], 60_000)).stdout;
  /** Waits for the first report that matches; a timeout shows the reports and the end of the daemon's journal. */
  const reportWhere = async (h: HostFixture, what: string, match: (r: Report) => boolean, timeoutMs = 60_000) => {
    for (const deadline = Date.now() + timeoutMs; ; await new Promise((r) => setTimeout(r, 50))) {
      const reports = await h.reports().catch(() => [] as Report[]);
      const found = reports.find(match);
      if (found) return { found, reports };
      if (Date.now() > deadline) throw new Error(`no report ${what}; reports: ${JSON.stringify(reports.map((r) => [r.sequence, r.trigger, r.said]))}\n${(await journal()).split('\n').slice(-30).join('\n')}`);
    }
  };

  it('a unit killed by hand and a file edited by hand are each repaired and reported; the apply\'s own writes and restarts trigger nothing', async () => {
    const h = await mesh.enrol({ start: false });
    await box.start(() => startSystemdContainer({ binds: [project, h.dir] }));
    // A service on the machine, as a package would have installed it.
    await inside('/bin/sh', ['-c', `printf '[Unit]\\nDescription=watched\\n[Service]\\nExecStart=/bin/sleep infinity\\nRestart=no\\n' > /etc/systemd/system/${UNIT} && systemctl daemon-reload`]);
    // The daemon, run by the container's systemd; its state and scratch root are the fixture's, bound in.
    await inside('systemd-run', ['--unit=mesh-host-watch', '--collect', process.execPath, join(project, 'bin/mesh-host'), 'run', ...h.flags, '--log-level', 'debug']);
    for (const deadline = Date.now() + 60_000; !(await journal()).includes('link: connected'); await new Promise((r) => setTimeout(r, 200))) {
      if (Date.now() > deadline) throw new Error(`the daemon did not connect:\n${await journal()}`);
    }

    const declaration = (content: string) => ({
      epoch: 1,
      resources: [
        { type: 'directory', id: 'app', path: '/srv/app' },
        { type: 'file', id: 'conf', path: '/srv/app/app.conf', content },
        { type: 'service', id: 'watched', unit: UNIT, state: 'running', restartOn: ['conf'] },
      ],
    });
    await h.put({ ...declaration('v = 1\n'), sequence: 2 });
    await reportWhere(h, 'of sequence 2 converged', (r) => r.declaration?.sequence === 2 && r.outcome === 'converged');
    // The next delivery rewrites the file and restarts the unit (restartOn): the apply's own doing.
    await h.put({ ...declaration('v = 2\n'), sequence: 3 });
    const { found: third } = await reportWhere(h, 'of sequence 3 converged', (r) => r.declaration?.sequence === 3 && r.trigger === 'delivery');
    expect(third).toMatchObject({ outcome: 'converged', steps: expect.arrayContaining([expect.objectContaining({ resource: 'watched', status: 'done' })]) });
    expect(await inside('systemctl', ['is-active', UNIT])).toBe('active');

    // The unit killed by hand: its main process, the unit's only one (a kill of the whole control group at
    // times fails with EIO inside the container).
    const killedAt = Date.now();
    await inside('systemctl', ['kill', '--kill-whom=main', '-s', 'KILL', UNIT]);
    const { found: unitReport, reports: untilUnit } = await reportWhere(h, `saying ${UNIT} was failed`, (r) => r.said.includes(`${UNIT} was failed`));
    const unitMs = Date.now() - killedAt;
    // The positive marker of absence: the report right after the delivery's is the one the kill asked
    // for. Had the delivery's writes or its restart of the unit woken a watcher, a reconcile carrying
    // what it found would have spoken in between.
    expect(unitReport.sequence).toBe(third.sequence + 1);
    expect(untilUnit.filter((r) => r.sequence > third.sequence).map((r) => r.sequence)).toEqual([third.sequence + 1]);
    expect(unitReport).toMatchObject({ trigger: 'reconcile', outcome: 'converged' });
    expect(unitReport.said.filter((s) => s.startsWith('drift: '))).toEqual([]);
    expect(unitReport.steps).toContainEqual(expect.objectContaining({ resource: 'watched', status: 'done' }));
    expect(await inside('systemctl', ['is-active', UNIT])).toBe('active');

    // The file edited by hand on the machine.
    const conf = join(h.root, 'srv/app/app.conf');
    const editedAt = Date.now();
    await inside('/bin/sh', ['-c', `echo 'edited by hand' > ${conf}`]);
    // Said as a content change, or, when the edit lands in the moment before the watch's first look of the files
    // (it looks 100 ms after an apply, and counts anything heard before that as drift), as a change when the watch began.
    const saysEdit = (s: string) => s === 'drift: /srv/app/app.conf content changed' || s === 'drift: /srv/app/app.conf changed as the watch began';
    const { found: driftReport } = await reportWhere(h, 'saying the edit', (r) => r.said.some(saysEdit));
    const fileMs = Date.now() - editedAt;
    expect(driftReport.sequence).toBe(unitReport.sequence + 1);
    expect(driftReport).toMatchObject({ trigger: 'reconcile', outcome: 'converged', steps: expect.arrayContaining([expect.objectContaining({ resource: 'conf', status: 'done' })]) });
    expect(readFileSync(conf, 'utf8')).toBe('v = 2\n');

    // The figures, from the act to the report in the mesh's stream (polled every 50 ms, so up to that much later).
    console.log(`watchers end to end on a real systemd: a unit killed by hand reported after ${unitMs} ms (aim: within 5 s); a file edited by hand restored and reported after ${fileMs} ms (aim: within 2 s)`);
    await inside('systemctl', ['stop', 'mesh-host-watch']);
  });
});
