import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { join } from 'node:path';
import { NatsServer, natsUnavailable } from '../support/nats.js';
import { runCli } from '../support/cli.js';
import { releaseBuild } from '../support/releases.js';
import { scratch } from '../support/tree.js';
import type { Report } from '../../src/engine/report/report.js';
import { readSeed } from '../../src/control/commands/keys-command.js';
import { sign } from '../../src/core/declaration/envelope.js';
import { DECLARATIONS_BUCKET, REPORTS_STREAM } from '../../src/link/wire.js';
import { DiscardPolicy, jetstreamManager } from '@nats-io/jetstream';

/**
 * The launcher with real single executables of this checkout and a real nats-server, in a scratch
 * tree (--root): install, a self-update that passes its trial, one that fails at start, one whose
 * apply fails, a release named but not unpacked, a stop in the middle of a trial; a stale value of the
 * key refused by a host on trial, which passes; the report sequence of the whole run continuous.
 */
const unavailable = natsUnavailable();
const NODE = 'release-node';
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
const DAY = 24 * 3600 * 1000;
/** How long a trial has here: long enough to pass on a loaded machine, short enough to wait out once. */
const TRIAL_MS = 40_000;

describe.skipIf(unavailable !== undefined && !process.env.CI)(`mesh-host launch${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let server: NatsServer;
  let work: ReturnType<typeof scratch>;
  let builds: Record<string, string>;
  let launcher: ChildProcess | undefined;
  let lines: string[] = [];

  beforeAll(async () => {
    builds = {
      '0.1.0': releaseBuild('0.1.0'),
      '0.2.0': releaseBuild('0.2.0'),
      '0.3.0': releaseBuild('0.3.0', 'start'),
      '0.4.0': releaseBuild('0.4.0', 'apply'),
    };
    work = scratch('mesh-host-launch-');
    server = await NatsServer.start();
  }, 900_000);
  afterAll(async () => {
    if (launcher && launcher.exitCode === null) {
      launcher.kill('SIGTERM');
      await new Promise((resolve) => launcher!.once('exit', resolve));
    }
    await server?.stop();
    work?.cleanup();
  });

  const root = () => join(work.dir, 'root');
  const stateDir = () => join(root(), 'var/lib/mesh-host');
  const releases = () => join(stateDir(), 'releases');
  const hostFlags = () => ['--root', root(), '--state-dir', stateDir(), '--config', join(root(), 'etc/mesh-host/host.json')];
  const key = () => join(work.dir, 'keys/operator.nk');
  const current = () => readlinkSync(join(releases(), 'current'));

  /** What an archive resource does: the release unpacked under releases/<version>/. */
  const unpack = (version: string) => {
    mkdirSync(join(releases(), version), { recursive: true });
    copyFileSync(builds[version]!, join(releases(), version, 'mesh-host'));
  };
  let sequence = 1;
  const send = async (release?: string) => {
    const file = join(work.dir, `decl-${++sequence}.json`);
    const resources = [
      { type: 'directory', id: 'srv', path: '/srv' },
      { type: 'directory', id: 'app', path: '/srv/app' },
      { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: `delivery ${sequence}\n` },
      ...(release ? [{ type: 'file', id: 'release', path: '/etc/mesh-host/release', content: `${release}\n` }] : []),
    ];
    writeFileSync(file, JSON.stringify({ version: 1, node: NODE, mode: 'converged', resources }));
    const sent = await runCli('meshctl', ['send', NODE, file, '--key', key(), '--server', server.url]);
    expect(sent.code, sent.stderr).toBe(0);
  };
  const reports = async (): Promise<Report[]> => {
    const r = await runCli('meshctl', ['reports', '--node', NODE, '--server', server.url, '--json']);
    return r.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Report);
  };
  const until = async (what: string, done: () => boolean | Promise<boolean>, timeoutMs = 120_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the launcher said:\n${lines.slice(-40).join('\n')}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const said = (pattern: RegExp) => lines.some((l) => pattern.test(l));
  /** When the launcher logged a line (its pino time). */
  const loggedAt = (pattern: RegExp) => (JSON.parse(lines.find((l) => pattern.test(l))!) as { time: number }).time;
  /**
   * A replay of the file's declaration, signed, under the node's key (connected beforehand, so that the
   * put is at once), and then the value it replaced put back: meshctl numbers a send after the key's latest.
   */
  const replayer = async (file: string) => {
    const nc = await connect({ servers: [server.url] });
    const kv = await new Kvm(nc).open(DECLARATIONS_BUCKET);
    const envelope = JSON.stringify(await sign(readFileSync(file), readSeed(key())));
    let replaced: Uint8Array | undefined;
    return {
      put: async () => {
        replaced = (await kv.get(NODE))!.value;
        await kv.put(NODE, envelope);
      },
      restore: async () => {
        await kv.put(NODE, replaced!);
        await nc.close();
      },
    };
  };
  /** Acts, once, on the first line the launcher logs that matches: at once, not at the next look of an `until`. */
  let watches: { pattern: RegExp; act: () => void }[] = [];
  const whenLogged = (pattern: RegExp, act: () => void) => watches.push({ pattern, act });
  const startLauncher = (env: NodeJS.ProcessEnv = {}) => {
    lines = [];
    const child = spawn(join(releases(), 'current/mesh-host'), ['launch', ...hostFlags()], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let rest = '';
    const onData = (d: Buffer) => {
      const text = rest + d.toString();
      const parts = text.split('\n');
      rest = parts.pop()!;
      lines.push(...parts);
      for (const line of parts) {
        const matched = watches.filter((w) => w.pattern.test(line));
        watches = watches.filter((w) => !matched.includes(w));
        for (const w of matched) w.act();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    if (process.env.MESH_HOST_TEST_LOG) child.stdout!.on('data', (d: Buffer) => appendFileSync(process.env.MESH_HOST_TEST_LOG!, d));
    launcher = child;
    return child;
  };
  const exited = (child: ChildProcess) => new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code))));

  it('installs, updates on trial, rolls back a release that fails at start or in its apply, and keeps the report sequence whole', async () => {
    expect((await runCli('meshctl', ['keygen', '--out', join(work.dir, 'keys')])).code).toBe(0);
    const first = join(work.dir, 'first.json');
    writeFileSync(first, JSON.stringify({ version: 1, node: NODE, mode: 'converged', sequence: 1, resources: [{ type: 'directory', id: 'srv', path: '/srv' }, { type: 'directory', id: 'app', path: '/srv/app' }] }));
    const bundle = join(work.dir, 'bundle.json');
    expect((await runCli('meshctl', ['bundle', first, '--key', key(), '--server', server.url, '--out', bundle])).code).toBe(0);

    // Installed from the single executable into the scratch tree, enrolled in the same step.
    const install = spawn(builds['0.1.0']!, ['install', '--root', root(), '--bundle', bundle, '--mode', 'converged', '--no-start', '--json', '--log-level', 'warn']);
    let out = '';
    let err = '';
    install.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    install.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    expect(await exited(install), `${out}\n${err}`).toBe(0);
    const installed = JSON.parse(out) as { steps: { action: string; status: string }[]; changed: boolean };
    expect(installed.changed).toBe(true);
    expect(current()).toBe('0.1.0');
    expect(installed.steps.find((s) => s.action.startsWith('enrol'))?.status).toBe('done');

    // Once more: nothing to change, and it says so.
    const again = spawn(builds['0.1.0']!, ['install', '--root', root(), '--bundle', bundle, '--mode', 'converged', '--no-start', '--log-level', 'warn']);
    out = '';
    again.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    expect(await exited(again)).toBe(0);
    expect(out).toContain('nothing to change');

    // A second launcher is refused while the first runs.
    const child = startLauncher();
    await until('the host to serve', () => said(/link: connected/));
    const second = spawn(join(releases(), 'current/mesh-host'), ['launch', ...hostFlags()], { stdio: ['ignore', 'pipe', 'pipe'] });
    let refusal = '';
    second.stderr!.on('data', (d: Buffer) => (refusal += d.toString()));
    expect(await exited(second)).toBe(3);
    expect(refusal).toMatch(/launch\.lock is held by pid \d+ \(mesh-host launch/);

    // 0.2.0, unpacked and named: tried, passes, becomes current. Right after the release is named, the
    // first declaration is put again (signed, but older than what is applied): the key's latest value
    // when the host on trial connects, which it refuses; a refusal is not its apply, and does not fail it.
    unpack('0.2.0');
    const replay = await replayer(first);
    await send('0.2.0');
    await replay.put();
    await until('0.2.0 to be current', () => existsSync(join(releases(), 'current')) && current() === '0.2.0');
    await until('the trial report', async () => (await reports()).some((r) => r.outcome === 'converged' && r.said.some((line) => line.startsWith('release 0.2.0 on trial'))));
    const trialStarted = loggedAt(/release 0\.2\.0 started on trial/);
    const replayRefused = (await reports()).filter((r) => r.outcome === 'refused' && /stale/.test(r.error?.message ?? ''));
    expect(replayRefused.some((r) => Date.parse(r.startedAt) > trialStarted), 'the replay refused by the host on trial').toBe(true);
    await replay.restore();

    // 0.3.0 fails at start: stopped, 0.2.0 resumes and reports it.
    unpack('0.3.0');
    await send('0.3.0');
    await until('the failed trial of 0.3.0 reported', async () => (await reports()).some((r) => r.trigger === 'trial' && r.outcome === 'failed' && r.error?.message.includes('release 0.3.0 failed its trial')));
    expect(current()).toBe('0.2.0');

    // 0.4.0 starts, but its apply fails: stopped, 0.2.0 resumes and reports it.
    unpack('0.4.0');
    await send('0.4.0');
    await until('the failed trial of 0.4.0 reported', async () => (await reports()).some((r) => r.outcome === 'failed' && r.error?.message.includes('release 0.4.0 failed its trial: its apply ended failed')));
    expect(current()).toBe('0.2.0');

    // A release named but not unpacked: reported, 0.2.0 serves on.
    await send('0.9.9');
    await until('the missing release reported', async () => (await reports()).some((r) => r.error?.message.includes('release 0.9.9 is named but not unpacked')));

    // And 0.2.0 still serves: the next delivery is applied.
    const count = (await reports()).length;
    await send('0.2.0');
    await until('the next delivery reported', async () => (await reports()).length > count);

    // A stop in the middle of a trial (back to 0.1.0): both hosts end, the launcher exits 0, current unchanged.
    await send('0.1.0');
    await until('0.1.0 on trial', () => said(/release 0\.1\.0 started on trial/));
    child.kill('SIGTERM');
    expect(await exited(child)).toBe(0);
    expect(current()).toBe('0.2.0');

    const all = await reports();
    expect(all.map((r) => r.sequence)).toEqual(all.map((_, i) => i + 1));
    expect(all.filter((r) => r.trigger === 'trial').map((r) => r.outcome)).toEqual(['failed', 'failed', 'failed']);
  }, 900_000);

  /**
   * A trial is a duration: the wall clock of the launcher and of both hosts (libfaketime, reading its
   * offset from a file at every call; the monotonic clock as it is) stepped a day forward while a trial
   * runs does not end it, and a day back does not hold one that cannot pass beyond its time.
   */
  it.skipIf(!existsSync(LIBFAKETIME) && !process.env.CI)('a trial under a wall clock stepped a day forward passes; one stepped a day back fails when its time is up, not a day later', async () => {
    const config = join(root(), 'etc/mesh-host/host.json');
    writeFileSync(config, JSON.stringify({ ...(JSON.parse(readFileSync(config, 'utf8')) as object), trialTimeoutMs: TRIAL_MS }));
    const offset = join(work.dir, 'faketime-offset');
    writeFileSync(offset, '+0');
    const stepTo = (to: string) => () => writeFileSync(offset, to);

    // The first run ended in the middle of a trial of 0.1.0, which is declared still: the launcher tries
    // it again as soon as 0.2.0 serves. A day forward the moment it starts.
    whenLogged(/release 0\.1\.0 started on trial/, stepTo('+1d'));
    const child = startLauncher({ LD_PRELOAD: LIBFAKETIME, FAKETIME_TIMESTAMP_FILE: offset, FAKETIME_NO_CACHE: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1' });
    await until('0.1.0 to pass its trial', () => said(/release 0\.1\.0 passed its trial/));
    expect(current()).toBe('0.1.0');
    // The step came inside the trial: it began by the clock as it was and passed a day ahead.
    expect(Math.abs(loggedAt(/release 0\.1\.0 started on trial/) - Date.now()), 'the trial began before the step').toBeLessThan(DAY / 2);
    expect(loggedAt(/release 0\.1\.0 passed its trial/) - Date.now(), 'the trial passed after the step').toBeGreaterThan(DAY / 2);

    // 0.2.0 on trial cannot pass: the reports stream is full, so its report is never acknowledged. A day
    // back the moment it starts; it fails when its time is up.
    const nc = await connect({ servers: [server.url] });
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(REPORTS_STREAM);
    await jsm.streams.update(REPORTS_STREAM, { ...info.config, max_bytes: Math.max(1, info.state.bytes), discard: DiscardPolicy.New });
    let trialBegan = 0;
    whenLogged(/release 0\.2\.0 started on trial/, () => {
      trialBegan = performance.now();
      stepTo('-1d')();
    });
    await send('0.2.0');
    await until('the trial of 0.2.0 to fail', () => said(/release 0\.2\.0 failed its trial: it did not pass within/), TRIAL_MS + 120_000);
    const took = performance.now() - trialBegan;
    expect(took, 'not before its time').toBeGreaterThanOrEqual(TRIAL_MS - 1000);
    expect(took, 'when its time was up, not a day later').toBeLessThan(TRIAL_MS + 60_000);
    expect(current()).toBe('0.1.0');

    // Room again: every report, the failed trial's among them, goes once and in order.
    await jsm.streams.update(REPORTS_STREAM, { ...info.config });
    await nc.close();
    await until('the failed trial of 0.2.0 reported', async () => (await reports()).some((r) => r.trigger === 'trial' && r.outcome === 'failed' && /release 0\.2\.0 failed its trial: it did not pass within/.test(r.error?.message ?? '')));
    const all = await reports();
    expect(all.map((r) => r.sequence)).toEqual(all.map((_, i) => i + 1));
    child.kill('SIGTERM');
    expect(await exited(child)).toBe(0);
  }, 600_000);
});
