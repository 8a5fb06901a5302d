import { expect } from 'vitest';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { dirname, join } from 'node:path';
import type { NatsServer } from '../support/nats.js';
import { runCli } from '../support/cli.js';
import { releaseBuild } from '../support/releases.js';
import type { SystemdContainer } from '../support/systemd-container.js';
import type { Report } from '../../src/engine/report/report.js';

/** What differs between the service managers in the self-update scenario. */
export interface ManagerUnderTest {
  name: 'systemd' | 'openrc';
  /** The service's log so far. */
  log(): Promise<string>;
  stop(): Promise<{ code: number | null; stderr: string }>;
  /** Whether the service reads as stopped, and cleanly. */
  stoppedCleanly(): Promise<boolean>;
  /** The service definition the installer wrote. */
  definition: string;
  /** What only this manager can show, once the service runs (a crash restarted, say). */
  afterInstall?: () => Promise<void>;
}

export interface Scenario {
  container: SystemdContainer;
  server: NatsServer;
  work: string;
  /** Single executables by version (test builds fail at start or in their applies). */
  builds: Record<'0.1.0' | '0.2.0' | '0.3.0' | '0.4.0', string>;
  manager: ManagerUnderTest;
  node: string;
}

const execFileAsync = promisify(execFile);
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The release's life on a real service manager, with node absent: installed from the single
 * executable and enrolled in one step; a delivery; a self-update that passes its trial; one that fails
 * at start and one whose apply fails, both rolled back and reported by the old host; a stop in the
 * middle of a trial; the report sequence of the whole run without a gap; uninstalled, the state kept.
 */
/** The four builds the scenario ships: two good ones, one that fails at start, one whose apply fails. */
export function scenarioBuilds(): Scenario['builds'] {
  return { '0.1.0': releaseBuild('0.1.0'), '0.2.0': releaseBuild('0.2.0'), '0.3.0': releaseBuild('0.3.0', 'start'), '0.4.0': releaseBuild('0.4.0', 'apply') };
}

/** The folders holding the builds, bound read-only into a container. */
export const buildFolders = (builds: Scenario['builds']): string[] => [...new Set(Object.values(builds).map((b) => dirname(dirname(b))))];

export async function selfUpdateScenario(s: Scenario): Promise<Report[]> {
  const { container, server, work, builds, manager, node } = s;
  const inside = async (command: string, args: string[] = [], timeoutMs = 60_000) => {
    const r = await container.exec(command, args, timeoutMs);
    return { ...r, out: r.stdout.trim() };
  };
  const until = async (what: string, done: () => Promise<boolean>, timeoutMs = 180_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the service's log ends:\n${(await manager.log()).split('\n').slice(-40).join('\n')}`);
      await wait(300);
    }
  };
  const reports = async (): Promise<Report[]> => {
    const r = await runCli('meshctl', ['reports', '--node', node, '--server', server.url, '--json']);
    return r.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Report);
  };
  const key = join(work, 'keys/operator.nk');
  let n = 1;
  /** The releases shipped so far, as archive resources: every one stays declared, so none the launcher may go back to is removed. */
  const shipped: Record<string, unknown>[] = [];
  const send = async (release?: string) => {
    const file = join(work, `decl-${++n}.json`);
    const resources = [
      { type: 'directory', id: 'app', path: '/srv/app' },
      { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: `delivery ${n}\n` },
      ...shipped,
      ...(release ? [{ type: 'file', id: 'release', path: '/etc/mesh-host/release', content: `${release}\n` }] : []),
    ];
    writeFileSync(file, JSON.stringify({ version: 1, node, mode: 'converged', resources }));
    const sent = await runCli('meshctl', ['send', node, file, '--key', key, '--server', server.url]);
    expect(sent.code, sent.stderr).toBe(0);
    return n;
  };
  /**
   * A release as the mesh ships it: a tar.gz of the executable put in the archive store, declared as an
   * archive resource unpacked under releases/<version>/ (the releases directory itself is the installer's).
   */
  const ship = async (version: keyof Scenario['builds']) => {
    const archive = join(work, `mesh-host-${version}.tar.gz`);
    await execFileAsync('tar', ['--create', '--gzip', '--file', archive, '--directory', dirname(builds[version]), '--owner=0', '--group=0', 'mesh-host']);
    const put = await runCli('meshctl', ['put-archive', archive, '--name', `mesh-host-${version}.tar.gz`, '--server', server.url, '--json'], { timeoutMs: 300_000 });
    expect(put.code, put.stderr).toBe(0);
    const { resource } = JSON.parse(put.stdout) as { resource: { sha256: string; source: { object: string } } };
    shipped.push({ type: 'archive', id: `release-${version.replaceAll('.', '-')}`, path: `/var/lib/mesh-host/releases/${version}`, sha256: resource.sha256, source: resource.source });
  };
  const current = async () => (await inside('readlink', ['/var/lib/mesh-host/releases/current'])).out;
  const trialFailed = (release: string) => async () => (await reports()).some((r) => r.trigger === 'trial' && r.outcome === 'failed' && (r.error?.message ?? '').includes(`release ${release} failed its trial`));

  // No node here: the single executable is all there is.
  expect((await inside('sh', ['-c', 'command -v node'])).code).not.toBe(0);

  expect((await runCli('meshctl', ['keygen', '--out', dirname(key)])).code).toBe(0);
  const first = join(work, 'first.json');
  writeFileSync(first, JSON.stringify({ version: 1, node, mode: 'converged', sequence: 1, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }] }));
  const bundle = join(work, 'bundle.json');
  expect((await runCli('meshctl', ['bundle', first, '--key', key, '--server', server.url, '--out', bundle])).code).toBe(0);

  // Installed from the single executable, enrolled, enabled and started in one step.
  const installed = await inside(builds['0.1.0'], ['install', '--bundle', bundle, '--mode', 'converged', '--json', '--log-level', 'warn'], 120_000);
  expect(installed.code, `${installed.stdout}\n${installed.stderr}`).toBe(0);
  const steps = (JSON.parse(installed.out) as { steps: { action: string; status: string }[] }).steps;
  expect(steps.filter((st) => st.status === 'done').map((st) => st.action)).toEqual(expect.arrayContaining(['copy release 0.1.0', 'enrol (genesis, --mode converged)', 'enable the service', 'start the service']));
  expect((await inside('cat', [manager.definition])).out).toMatch(/\/var\/lib\/mesh-host\/releases\/current\/mesh-host( |"\ncommand_args=")launch/);
  expect((await inside('stat', ['-c', '%a', '/var/lib/mesh-host'])).out).toBe('700');
  await until('the host to connect', async () => (await manager.log()).includes('link: connected'));
  // A second install changes nothing, and says so.
  const again = await inside('/var/lib/mesh-host/releases/current/mesh-host', ['install', '--bundle', bundle, '--mode', 'converged', '--log-level', 'warn'], 120_000);
  expect(again.code, again.stderr).toBe(0);
  expect(again.out).toContain('nothing to change');
  expect((await inside('/var/lib/mesh-host/releases/current/mesh-host', ['--version'])).out).toMatch(/^mesh-host 0\.1\.0 \(commit [0-9a-f]{40}/);
  await manager.afterInstall?.();

  // A delivery, applied and reported.
  await send();
  await until('the delivery applied', async () => (await inside('cat', ['/srv/app/app.conf'])).out === `delivery ${n}`);

  // 0.2.0: tried, passes, becomes current.
  await ship('0.2.0');
  await send('0.2.0');
  await until('0.2.0 to be current', async () => (await current()) === '0.2.0');
  await until('the trial report of 0.2.0', async () => (await reports()).some((r) => r.outcome === 'converged' && r.said.some((line) => line.startsWith('release 0.2.0 on trial'))));
  expect((await inside('/var/lib/mesh-host/releases/current/mesh-host', ['--version'])).out).toMatch(/^mesh-host 0\.2\.0 /);

  // 0.3.0 fails at start, 0.4.0 in its apply: both stopped, 0.2.0 resumes and reports it.
  await ship('0.3.0');
  await send('0.3.0');
  await until('the failed trial of 0.3.0 reported', trialFailed('0.3.0'));
  await ship('0.4.0');
  await send('0.4.0');
  await until('the failed trial of 0.4.0 reported', trialFailed('0.4.0'));
  expect(await current()).toBe('0.2.0');
  // The old host serves again: the next delivery is applied (and 0.4.0 is not tried again).
  const next = await send('0.4.0');
  await until('the delivery after the rollbacks', async () => (await inside('cat', ['/srv/app/app.conf'])).out === `delivery ${next}`);

  // A stop in the middle of a trial (back to 0.1.0): both hosts end between applies, the stop is clean.
  const trials = ((await manager.log()).match(/release 0\.1\.0 started on trial/g) ?? []).length;
  await send('0.1.0');
  await until('0.1.0 on trial', async () => ((await manager.log()).match(/release 0\.1\.0 started on trial/g) ?? []).length > trials);
  const stopped = await manager.stop();
  expect(stopped.code, stopped.stderr).toBe(0);
  expect(await manager.stoppedCleanly()).toBe(true);
  expect((await inside('pgrep', ['-f', 'mesh-host (run|launch)'])).code).toBe(1);
  // 0.1.0 is a good build: on a loaded machine its trial can pass before the stop reaches the launcher.
  // Then it is current, as a passed trial makes it; stopped in the middle, 0.2.0 stays current.
  const passedFirst = (await manager.log()).includes('release 0.1.0 passed its trial');
  expect(await current()).toBe(passedFirst ? '0.1.0' : '0.2.0');

  // Every report of the run, in order, none missing.
  const all = await reports();
  expect(all.map((r) => r.sequence)).toEqual(all.map((_, i) => i + 1));

  // Uninstalled: the service and the releases go, the state stays.
  const removed = await inside('/var/lib/mesh-host/releases/0.2.0/mesh-host', ['uninstall', '--log-level', 'warn']);
  expect(removed.code, removed.stderr).toBe(0);
  expect((await inside('test', ['-e', manager.definition])).code).toBe(1);
  expect((await inside('test', ['-e', '/var/lib/mesh-host/releases'])).code).toBe(1);
  expect((await inside('test', ['-e', '/var/lib/mesh-host/state.json'])).code).toBe(0);
  return all;
}
