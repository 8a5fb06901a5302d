// `npm run release [-- --version V] [--out DIR] [--host-only] [--fault start|apply]`: mesh-host and meshctl as single executables (Node's
// single executable applications): each program bundled by esbuild into one CommonJS script (what
// Node 20 can carry), a blob made of it by `node --experimental-sea-config`, injected by postject into
// a copy of this node binary (stripped of its symbol tables first). Then DIR (default
// dist/release) gets the tarball of both, the systemd unit, the OpenRC script and SHA256SUMS.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { inject } from 'postject';
import { buildInfo, commitTime } from './build-info.mjs';
import { asciiOnly, programBundle } from './bundle.mjs';
import { writeUnits } from './units.mjs';

const { values } = parseArgs({
  options: { version: { type: 'string' }, out: { type: 'string' }, fault: { type: 'string' }, 'host-only': { type: 'boolean' } },
  strict: true,
});
const out = resolve(values.out ?? 'dist/release');
const info = buildInfo(values.version);
// Test builds only: a release that fails at start or whose every apply fails, to try the rollback on.
// A product build leaves it empty and the bundler drops the code it guards.
const fault = values.fault ?? '';
if (!['', 'start', 'apply'].includes(fault)) throw new Error(`--fault must be start or apply, not ${fault}`);
const FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const work = join(out, '.work');
rmSync(out, { recursive: true, force: true });
mkdirSync(work, { recursive: true });

// The node binary without its symbol tables (the dynamic ones native addons link against stay): the
// same code, some 12 MB smaller. strip warns about notes it does not know; they are kept as they are.
const node = join(work, 'node');
copyFileSync(process.execPath, node);
execFileSync('strip', ['--strip-all', node], { stdio: ['ignore', 'ignore', 'ignore'] });

// --host-only: mesh-host alone, no archive (the tests' releases to update to).
const programs = values['host-only'] ? ['mesh-host'] : ['mesh-host', 'meshctl'];
for (const program of programs) {
  const script = join(work, `${program}.cjs`);
  await build(programBundle({ stdin: `require('./src/cli/${program}.ts').main(process.argv.slice(2));`, outfile: script, info, fault }));
  asciiOnly(script);
  const blob = join(work, `${program}.blob`);
  const config = join(work, `${program}.sea.json`);
  writeFileSync(config, JSON.stringify({ main: script, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true }));
  execFileSync(process.execPath, ['--experimental-sea-config', config], { stdio: ['ignore', 'ignore', 'inherit'] });
  const executable = join(out, program);
  copyFileSync(node, executable);
  await inject(executable, 'NODE_SEA_BLOB', readFileSync(blob), { sentinelFuse: FUSE });
  chmodSync(executable, 0o755);
}
rmSync(work, { recursive: true, force: true });
if (values['host-only']) {
  process.stdout.write(`release ${info.version} (commit ${info.commit}${fault ? `, fault ${fault}` : ''}): ${join(out, 'mesh-host')}\n`);
  process.exit(0);
}

writeUnits(out);
const tarball = `mesh-host-${info.version}-linux-${process.arch}.tar.gz`;
// Reproducible: owners, order and times do not depend on who built it when.
execFileSync('tar', ['--create', '--gzip', '--file', join(out, tarball), '--directory', out, '--owner=0', '--group=0', '--numeric-owner', '--sort=name', `--mtime=@${commitTime()}`, 'mesh-host', 'meshctl', 'mesh-host.service', 'mesh-host.openrc']);
const files = ['mesh-host', 'meshctl', 'mesh-host.service', 'mesh-host.openrc', tarball];
const sums = files.map((f) => `${createHash('sha256').update(readFileSync(join(out, f))).digest('hex')}  ${f}\n`).join('');
writeFileSync(join(out, 'SHA256SUMS'), sums);
process.stdout.write(`release ${info.version} (commit ${info.commit}) in ${out}:\n${sums}`);
