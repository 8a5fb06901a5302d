import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NatsServer, natsUnavailable } from '../support/nats.js';
import { projectDir, runCli } from '../support/cli.js';
import { containerUnavailable, startSystemdContainer, type SystemdContainer } from '../support/systemd-container.js';
import { scratch } from '../support/tree.js';
import type { Report } from '../../src/report/report.js';

/**
 * The unit the package ships (packaging/mesh-host.service), on a real systemd booted in a container
 * over a volatile copy of this machine's root: the daemon runs there with its default paths
 * (/etc/mesh-host, /var/lib/mesh-host are the container's throwaway ones) and reaches a nats-server on
 * this machine's loopback (the container shares its network).
 */
const unavailable = containerUnavailable() ?? natsUnavailable();
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(unavailable !== undefined && !process.env.CI)(`the packaged unit on a real systemd${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let container: SystemdContainer;
  let server: NatsServer;
  let work: ReturnType<typeof scratch>;
  const project = projectDir.replace(/\/$/, '');

  beforeAll(async () => {
    work = scratch('mesh-host-unit-');
    server = await NatsServer.start();
    container = await startSystemdContainer({ binds: [project, work.dir] });
  });
  afterAll(async () => {
    await container?.stop();
    await server?.stop();
    work?.cleanup();
  });

  const inside = async (command: string, args: string[]) => {
    const r = await container.exec(command, args, 60_000);
    return { ...r, out: r.stdout.trim() };
  };
  const show = async (property: string) => (await inside('systemctl', ['show', '-p', property, '--value', 'mesh-host.service'])).out;
  const until = async (what: string, done: () => Promise<boolean>, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the journal ends:\n${(await inside('journalctl', ['-u', 'mesh-host', '-n', '30', '--no-pager'])).stdout}`);
      await wait(200);
    }
  };
  const reports = async (): Promise<Report[]> => {
    const r = await runCli('meshctl', ['reports', '--node', 'unit-node', '--server', server.url, '--json']);
    return r.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Report);
  };

  it('enrolled by genesis, started by systemd: applies a delivery, reloads, is restarted after a crash, and stops between applies with status 0', async () => {
    const keys = join(work.dir, 'keys');
    const key = join(keys, 'operator.nk');
    expect((await runCli('meshctl', ['keygen', '--out', keys])).code).toBe(0);
    const first = join(work.dir, 'first.json');
    writeFileSync(first, JSON.stringify({ version: 1, node: 'unit-node', mode: 'converged', sequence: 1, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }] }));
    const bundle = join(work.dir, 'bundle.json');
    expect((await runCli('meshctl', ['bundle', first, '--key', key, '--server', server.url, '--out', bundle])).code).toBe(0);
    const genesis = await inside(process.execPath, [join(project, 'bin/mesh-host'), 'genesis', bundle, '--mode', 'converged', '--log-level', 'warn']);
    expect(genesis.code, genesis.stderr).toBe(0);

    // The unit as shipped, with the package where this checkout is instead of /opt/mesh-host.
    const unit = readFileSync(join(project, 'packaging/mesh-host.service'), 'utf8').replaceAll('/opt/mesh-host', project).replace('/usr/bin/node', process.execPath);
    writeFileSync(join(work.dir, 'mesh-host.service'), unit);
    expect((await inside('cp', [join(work.dir, 'mesh-host.service'), '/etc/systemd/system/mesh-host.service'])).code).toBe(0);
    const analyzed = await inside('systemd-analyze', ['verify', '/etc/systemd/system/mesh-host.service']);
    expect(analyzed.stderr).not.toMatch(/mesh-host\.service:\d+:/);
    expect((await inside('systemctl', ['daemon-reload'])).code).toBe(0);
    const started = await inside('systemctl', ['enable', '--now', 'mesh-host.service']);
    expect(started.code, started.stderr).toBe(0);
    await until('the daemon to connect', async () => (await inside('journalctl', ['-u', 'mesh-host', '--no-pager', '-o', 'cat'])).stdout.includes('link: connected'));

    // A delivery, applied inside the container and reported.
    const next = join(work.dir, 'next.json');
    writeFileSync(next, JSON.stringify({ version: 1, node: 'unit-node', mode: 'converged', resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: 'from the mesh\n' }] }));
    expect((await runCli('meshctl', ['send', 'unit-node', next, '--key', key, '--server', server.url])).code).toBe(0);
    await until('the delivery applied', async () => (await inside('cat', ['/srv/app/app.conf'])).out === 'from the mesh');
    await until('its report', async () => (await reports()).length === 2);

    // systemctl reload: SIGHUP, a move between applies onto the same bus.
    const pid = await show('MainPID');
    expect((await inside('systemctl', ['reload', 'mesh-host.service'])).code).toBe(0);
    await until('the move', async () => ((await inside('journalctl', ['-u', 'mesh-host', '--no-pager', '-o', 'cat'])).stdout.match(/link: connected/g) ?? []).length >= 2);
    expect(await show('MainPID')).toBe(pid);

    // A crash: systemd starts it again, and the next delivery is applied and reported.
    const killed = await inside('systemctl', ['kill', '-s', 'KILL', 'mesh-host.service']);
    expect(killed.code, `${killed.stderr}\n${await show('ActiveState')} ${await show('SubState')} ${await show('MainPID')}\n${(await inside('journalctl', ['-u', 'mesh-host', '-n', '60', '--no-pager'])).stdout}`).toBe(0);
    await until('the restart', async () => { const now = await show('MainPID'); return now !== '0' && now !== pid && (await show('ActiveState')) === 'active'; });
    expect(Number(await show('NRestarts'))).toBe(1);
    writeFileSync(next, JSON.stringify({ version: 1, node: 'unit-node', mode: 'converged', resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: 'after the crash\n' }] }));
    expect((await runCli('meshctl', ['send', 'unit-node', next, '--key', key, '--server', server.url])).code).toBe(0);
    await until('the delivery after the restart', async () => (await inside('cat', ['/srv/app/app.conf'])).out === 'after the crash');
    await until('its report', async () => (await reports()).length === 3);
    expect((await reports()).map((r) => [r.sequence, r.trigger, r.outcome])).toEqual([[1, 'genesis', 'converged'], [2, 'delivery', 'converged'], [3, 'delivery', 'converged']]);

    // systemctl stop: SIGTERM to the daemon alone; it ends between applies, status 0, not restarted.
    expect((await inside('systemctl', ['stop', 'mesh-host.service'])).code).toBe(0);
    expect(await show('ActiveState')).toBe('inactive');
    expect(await show('Result')).toBe('success');
    expect((await inside('journalctl', ['-u', 'mesh-host', '--no-pager', '-o', 'cat'])).stdout).toContain('the host ends between applies: the store is quiesced');
  }, 180_000);
});
