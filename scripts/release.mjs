// `npm run release [-- --version V] [--out DIR] [--arch x64|arm64] [--release-key FILE] [--host-only] [--fault start|apply]`:
// mesh-host and meshctl as one single executable (Node's single executable applications) for linux-x64
// and linux-arm64: both programs bundled by esbuild into one CommonJS script (what Node 20 can carry)
// that runs meshctl when run by that name (a link) or as `mesh-host ctl …`, mesh-host otherwise; a blob
// made of it by `node --experimental-sea-config`, injected by postject into a copy of the architecture's
// node binary (stripped of its symbol tables first; scripts/node-binary.mjs: this node for its own
// architecture, the npm package node-linux-ARCH at the same version, pinned in package-lock.json, for
// another). Then DIR (default dist/release) gets for x64, and DIR/linux-arm64 for arm64, the man pages,
// the systemd unit, the OpenRC script, SHA256SUMS over them and the executable and its signature by the
// release key (SHA256SUMS.sig); DIR gets each architecture's tarball of them all and its Debian package
// (scripts/deb.mjs); last, SHA256SUMS and its signature over all of it. `--arch` builds one architecture.
import { Buffer } from 'node:buffer';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { inject } from 'postject';
import { buildInfo, commitTime } from './build-info.mjs';
import { asciiOnly, programBundle } from './bundle.mjs';
import { writeManPages } from './man-pages.mjs';
import { DEBIAN_ARCH, debPackage } from './deb.mjs';
import { ARCHES, nodeBinary } from './node-binary.mjs';
import { writeUnits } from './units.mjs';
import { sha256Hex, signSums, sumsText, SIGNATURE_FILE, SUMS_FILE } from '../dist/src/core/declaration/release-sums.js';

const { values } = parseArgs({
  options: { version: { type: 'string' }, out: { type: 'string' }, arch: { type: 'string' }, fault: { type: 'string' }, 'host-only': { type: 'boolean' }, 'release-key': { type: 'string' } },
  strict: true,
});
const out = resolve(values.out ?? 'dist/release');
const info = buildInfo(values.version);
// Test builds only: a release that fails at start or whose every apply fails, to try the rollback on.
// A product build leaves it empty and the bundler drops the code it guards.
const fault = values.fault ?? '';
if (!['', 'start', 'apply'].includes(fault)) throw new Error(`--fault must be start or apply, not ${fault}`);
if (values.arch !== undefined && !ARCHES.includes(values.arch)) throw new Error(`--arch must be one of ${ARCHES.join(', ')}, not ${values.arch}`);
// --host-only without --arch: this machine's architecture alone (the tests' releases to update to).
const arches = values.arch ? [values.arch] : values['host-only'] ? [process.arch] : ARCHES;
// The release key (an operator nkey seed file, SO…) that signs SHA256SUMS: --release-key or MESH_HOST_RELEASE_KEY.
// Without one the release is unsigned, and hosts whose trust root pins release keys refuse it.
const releaseKey = values['release-key'] ?? process.env.MESH_HOST_RELEASE_KEY;
const FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const work = join(out, '.work');
rmSync(out, { recursive: true, force: true });
mkdirSync(work, { recursive: true });

/** Where an architecture's files are: x64's (and a single architecture's) at the top, another's in linux-ARCH. */
const dirOf = (arch) => (arch === arches[0] ? out : join(out, `linux-${arch}`));

const script = join(work, 'mesh-host.cjs');
await build(programBundle({ stdin: "require('./src/programs/both-programs.ts').main(process.argv0, process.argv.slice(2));", outfile: script, info, fault }));
asciiOnly(script);

/**
 * The blob for `arch`: the script, with V8's code cache only for this node's own architecture. A code
 * cache is compiled code for the node that made it; another architecture's V8 would reject it at every
 * start, so that one's blob carries the script alone and V8 compiles it as it runs.
 */
function blobFor(arch) {
  const codeCache = arch === process.arch;
  const blob = join(work, `mesh-host-${codeCache ? 'cached' : 'plain'}.blob`);
  const config = join(work, `mesh-host-${arch}.sea.json`);
  writeFileSync(config, JSON.stringify({ main: script, output: blob, disableExperimentalSEAWarning: true, useCodeCache: codeCache }));
  execFileSync(process.execPath, ['--experimental-sea-config', config], { stdio: ['ignore', 'ignore', 'inherit'] });
  return blob;
}

/** The single executable for `arch`, at DIR/mesh-host. */
async function executableFor(arch) {
  const dir = dirOf(arch);
  mkdirSync(dir, { recursive: true });
  const executable = join(dir, 'mesh-host');
  nodeBinary(arch, executable);
  await inject(executable, 'NODE_SEA_BLOB', readFileSync(blobFor(arch)), { sentinelFuse: FUSE });
  chmodSync(executable, 0o755);
  return executable;
}

/** SHA256SUMS over these files of DIR (paths relative to it), and its signature when a release key is given: what hosts check a release by. */
function signedSums(dir, files) {
  const digests = new Map(files.map((f) => [f, sha256Hex(readFileSync(join(dir, f)))]));
  const sums = sumsText(digests);
  writeFileSync(join(dir, SUMS_FILE), sums);
  if (releaseKey) writeFileSync(join(dir, SIGNATURE_FILE), signSums(Buffer.from(sums), [readFileSync(releaseKey, 'utf8')]));
  return sums;
}
const signedBy = releaseKey ? `signed with ${releaseKey}` : 'UNSIGNED (no --release-key): hosts whose trust root pins release keys refuse it';

const executables = [];
for (const arch of arches) executables.push({ arch, executable: await executableFor(arch) });
rmSync(work, { recursive: true, force: true });

// --host-only: the executable alone, no archive (the tests' releases to update to).
if (values['host-only']) {
  for (const { executable } of executables) signedSums(join(executable, '..'), ['mesh-host']);
  process.stdout.write(`release ${info.version} (commit ${info.commit}${fault ? `, fault ${fault}` : ''}, ${signedBy}): ${executables.map((e) => e.executable).join(', ')}\n`);
  process.exit(0);
}

// What each architecture's tarball carries, beside the executable and the link.
const files = ['mesh-host', 'mesh-host.service', 'mesh-host.openrc', 'mesh-host.1', 'meshctl.1'];
const published = [];
for (const { arch, executable } of executables) {
  const dir = dirOf(arch);
  writeUnits(dir);
  await writeManPages(dir, info);
  // meshctl is the same file run by another name.
  symlinkSync('mesh-host', join(dir, 'meshctl'));
  // The sums cover every file the tarball carries; the tarball carries them with their signature, so
  // that the installer, run from where it was unpacked, finds them beside itself.
  signedSums(dir, files);
  const tarball = `mesh-host-${info.version}-linux-${arch}.tar.gz`;
  const carried = [...files, 'meshctl', SUMS_FILE, ...(releaseKey ? [SIGNATURE_FILE] : [])].sort();
  // Reproducible: owners, order and times do not depend on who built it when.
  execFileSync('tar', ['--create', '--gzip', '--file', join(out, tarball), '--directory', dir, '--owner=0', '--group=0', '--numeric-owner', '--sort=name', `--mtime=@${commitTime()}`, ...carried]);
  const deb = await debPackage({ executable, info, arch: DEBIAN_ARCH[arch], out });
  published.push(...(dir === out ? files : []), tarball, basename(deb));
}
// Then the sums and signature of everything published (the top's files, every tarball and package),
// for whoever downloads them one by one; each tarball keeps the ones of what it carries.
const sums = signedSums(out, published);
const others = executables.filter((e) => dirOf(e.arch) !== out).map((e) => `${relative(out, dirOf(e.arch))}/ (${e.arch}, what its tarball carries)`);
process.stdout.write(`release ${info.version} (commit ${info.commit}) in ${out}${others.length ? `, ${others.join(', ')}` : ''}, ${signedBy}:\n${sums}`);
