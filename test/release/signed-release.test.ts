import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, type InitMesh } from '../support/mesh-init.js';
import { releaseBuild } from '../support/releases.js';
import { runCli } from '../support/cli.js';
import { openTrustRecord } from '../../src/core/declaration/trust-root.js';
import { scratch } from '../support/tree.js';
import { sha256Hex, signSums, sumsText, SIGNATURE_FILE, SUMS_FILE } from '../../src/core/declaration/release-sums.js';
import type { Report } from '../../src/engine/report/report.js';
import type { RunResult } from '../../src/core/system/runner.js';

/**
 * Signed releases with real single executables, a mesh made by `meshctl init` and its nats-server in
 * operator mode: `meshctl trust release` pins a release key in a new trust version; `mesh-host install`
 * refuses a release whose executable is not the one its signed SHA256SUMS lists (digest) and one whose
 * sums are not signed by the release key (signature), touching nothing, and installs the one that is;
 * the launcher refuses the same two as self-updates, reports them, serves on, and takes the signed one.
 */
const unavailable = natsUnavailable();
const NODE = 'signed-node';

describe.skipIf(unavailable !== undefined && !process.env.CI)(`signed releases${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let mesh: InitMesh;
  let work: ReturnType<typeof scratch>;
  let builds: Record<'0.1.0' | '0.2.0', string>;
  let launcher: ChildProcess | undefined;
  let lines: string[] = [];

  beforeAll(async () => {
    builds = { '0.1.0': releaseBuild('0.1.0'), '0.2.0': releaseBuild('0.2.0') };
    work = scratch('mesh-host-signed-');
    mesh = await initMesh();
  }, 900_000);
  afterAll(async () => {
    if (launcher && launcher.exitCode === null) {
      launcher.kill('SIGTERM');
      await new Promise((resolve) => launcher!.once('exit', resolve));
    }
    await mesh?.close();
    work?.cleanup();
  });

  const must = (what: string, r: RunResult) => expect(r.code, `${what}: ${r.stderr}\n${r.stdout}`).toBe(0);
  const at = (...parts: string[]) => join(work.dir, ...parts);
  const root = () => at('root');
  const stateDir = () => join(root(), 'var/lib/mesh-host');
  const releases = () => join(stateDir(), 'releases');
  const hostFlags = () => ['--root', root(), '--state-dir', stateDir(), '--config', join(root(), 'etc/mesh-host/host.json')];
  const releaseSeed = () => readFileSync(at('release-key/operator.nk'), 'utf8');
  const strangerSeed = () => readFileSync(at('stranger-key/operator.nk'), 'utf8');

  /**
   * A release in DIR as the release script leaves it: the executable, SHA256SUMS and its signature;
   * `listed` is the executable the sums were made for (another build's: the file was swapped after signing).
   */
  const releaseFolder = (dir: string, executable: string, o: { signer: string; listed?: string }) => {
    mkdirSync(dir, { recursive: true });
    copyFileSync(executable, join(dir, 'mesh-host'));
    const sums = sumsText(new Map([['mesh-host', sha256Hex(readFileSync(o.listed ?? executable))]]));
    writeFileSync(join(dir, SUMS_FILE), sums);
    writeFileSync(join(dir, SIGNATURE_FILE), signSums(Buffer.from(sums), [o.signer]));
    return join(dir, 'mesh-host');
  };
  const run = (command: string, args: string[]) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.once('exit', (code) => resolve({ code, out, err }));
    });
  const install = (executable: string) => run(executable, ['install', ...hostFlags().slice(0, 2), '--bundle', at('bundle.json'), '--mode', 'converged', '--no-start', '--json', '--log-level', 'warn']);
  const reports = async (): Promise<Report[]> => {
    const r = await mesh.meshctl(['reports', '--node', NODE, '--json']);
    return r.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Report);
  };
  const until = async (what: string, done: () => boolean | Promise<boolean>, timeoutMs = 120_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the launcher said:\n${lines.slice(-40).join('\n')}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  let sequence = 1;
  const send = async (release: string) => {
    const file = at(`decl-${++sequence}.json`);
    const resources = [
      { type: 'file', id: 'conf', path: '/srv/app.conf', content: `delivery ${sequence}\n` },
      { type: 'file', id: 'release', path: '/etc/mesh-host/release', content: `${release}\n` },
    ];
    writeFileSync(file, JSON.stringify({ version: 1, node: NODE, mode: 'converged', resources }));
    must('send', await mesh.meshctl(['send', NODE, file]));
  };
  const refusedReport = (pattern: RegExp) => async () => (await reports()).some((r) => pattern.test(r.error?.message ?? ''));

  it('pins a release key with the trust root; install refuses a swapped executable or a stranger’s signature, touching nothing', async () => {
    must('keygen', await mesh.meshctl(['keygen', '--out', at('release-key')]));
    must('keygen', await mesh.meshctl(['keygen', '--out', at('stranger-key')]));
    const rotated = await mesh.meshctl(['trust', 'release', '--release-key', at('release-key/operator.nk')]);
    must('trust release', rotated);
    const shown = await mesh.meshctl(['trust', 'show', '--json']);
    must('trust show', shown);
    expect(shown.stdout).toContain(readFileSync(at('release-key/operator.pub'), 'utf8').trim());

    mkdirSync(join(root(), 'srv'), { recursive: true });
    must('node-key', await mesh.meshctl(['node-key', NODE, '--out', at('node.nk')]));
    must('node-creds', await mesh.meshctl(['node-creds', NODE, '--out', at('node.creds')]));
    writeFileSync(at('first.json'), JSON.stringify({ version: 1, node: NODE, mode: 'converged', resources: [] }));
    must('bundle', await mesh.meshctl(['bundle', at('first.json'), '--node-key', at('node.nk'), '--embed-creds', at('node.creds'), '--out', at('bundle.json')]));

    // 0.2.0's sums, signed, beside 0.1.0's executable: the digest does not match.
    const swapped = await install(releaseFolder(at('swapped'), builds['0.1.0'], { signer: releaseSeed(), listed: builds['0.2.0'] }));
    expect(swapped.code, swapped.err).toBe(3);
    expect(swapped.err).toMatch(/the release is refused \(digest\): the digest of mesh-host does not match SHA256SUMS/);
    // Signed by a key that is not the release key.
    const stranger = await install(releaseFolder(at('stranger'), builds['0.1.0'], { signer: strangerSeed() }));
    expect(stranger.code, stranger.err).toBe(3);
    expect(stranger.err).toMatch(/the release is refused \(signature\): the signature over SHA256SUMS does not verify: 0 valid signature\(s\) of the release keys of trust version 2/);
    expect(existsSync(root() + '/var'), 'nothing touched').toBe(false);

    // Signed by the release key: installed and enrolled, its sums kept beside it.
    const good = await install(releaseFolder(at('good'), builds['0.1.0'], { signer: releaseSeed() }));
    expect(good.code, `${good.out}\n${good.err}`).toBe(0);
    const steps = (JSON.parse(good.out) as { steps: { action: string; status: string; detail?: string }[] }).steps;
    expect(steps[0]).toMatchObject({ action: `verify the release (${SUMS_FILE}, ${SIGNATURE_FILE})`, detail: 'signed by the release keys of trust version 2' });
    expect(steps.find((s) => s.action.startsWith('enrol'))?.status).toBe('done');
    expect(readFileSync(join(releases(), '0.1.0', SUMS_FILE), 'utf8')).toBe(readFileSync(at('good', SUMS_FILE), 'utf8'));
    // meshctl is the same executable, linked by its name.
    expect(readlinkSync(join(root(), 'usr/local/bin/meshctl'))).toBe('/var/lib/mesh-host/releases/current/mesh-host');
  }, 300_000);

  it('meshctl init pins release keys in trust version 1, given as public keys or seed files; anything else is named', async () => {
    const pub = readFileSync(at('release-key/operator.pub'), 'utf8').trim();
    must('init', await runCli('meshctl', ['init', at('mesh-2'), '--release-key', pub, '--release-key', at('stranger-key/operator.nk'), '--log-level', 'warn']));
    const opened = openTrustRecord(JSON.parse(readFileSync(at('mesh-2/trust/1.json'), 'utf8')));
    expect(opened.ok && opened.opened.root.release).toEqual({ keys: [pub, readFileSync(at('stranger-key/operator.pub'), 'utf8').trim()], threshold: 1 });
    const bad = await runCli('meshctl', ['init', at('mesh-3'), '--release-key', at('first.json')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`--release-key ${at('first.json')}: neither an operator public key (O…) nor a file holding an operator seed`);
    expect(existsSync(at('mesh-3'))).toBe(false);
  });

  it('the launcher refuses the same as self-updates, reports which, serves on, and takes the signed release', async () => {
    lines = [];
    launcher = spawn(join(releases(), 'current/mesh-host'), ['launch', ...hostFlags()], { stdio: ['ignore', 'pipe', 'pipe'] });
    let rest = '';
    const onData = (d: Buffer) => {
      const parts = (rest + d.toString()).split('\n');
      rest = parts.pop()!;
      lines.push(...parts);
    };
    launcher.stdout!.on('data', onData);
    launcher.stderr!.on('data', onData);
    await until('the host to serve', () => lines.some((l) => l.includes('link: connected')));

    // 0.2.0 unpacked with the sums of 0.1.0: refused on its digest, never run.
    releaseFolder(join(releases(), '0.2.0'), builds['0.2.0'], { signer: releaseSeed(), listed: builds['0.1.0'] });
    await send('0.2.0');
    await until('the swapped release reported', refusedReport(/release 0\.2\.0 is refused \(digest\): the digest of mesh-host does not match SHA256SUMS/));
    // 0.3.0 signed by a stranger: refused on its signature.
    releaseFolder(join(releases(), '0.3.0'), builds['0.2.0'], { signer: strangerSeed() });
    await send('0.3.0');
    await until('the stranger’s release reported', refusedReport(/release 0\.3\.0 is refused \(signature\)/));
    expect(lines.some((l) => /started on trial/.test(l)), 'no refused release was run').toBe(false);
    expect(readlinkSync(join(releases(), 'current'))).toBe('0.1.0');

    // 0.2.0 as the release key signed it: tried, passes, current.
    releaseFolder(join(releases(), '0.2.0'), builds['0.2.0'], { signer: releaseSeed() });
    await send('0.2.0');
    await until('0.2.0 to be current', () => readlinkSync(join(releases(), 'current')) === '0.2.0');
    await until('the trial report of 0.2.0', async () => (await reports()).some((r) => r.outcome === 'converged' && r.said.some((line) => line.startsWith('release 0.2.0 on trial'))));

    const stopped = new Promise((resolve) => launcher!.once('exit', resolve));
    launcher.kill('SIGTERM');
    expect(await stopped).toBe(0);
    const all = await reports();
    expect(all.map((r) => r.sequence)).toEqual(all.map((_, i) => i + 1));
  }, 600_000);
});
