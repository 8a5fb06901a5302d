// Builds the two programs, each as one CommonJS script with V8's code cache beside it. Node 20 spends
// a third of a second resolving typebox's ~700 ES modules one by one; split ES chunks still cost a
// resolution, a builtin's ES facade and a parse each at start. One script whose code V8 reads from its
// cache starts in a fraction of that, and commands' modules are still evaluated only when first needed.
// `tsc` still emits dist/src for the tests' helper processes and the benchmarks.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';
import { compileBundle } from '../bin/bundle.js';
import { buildInfo } from './build-info.mjs';
import { APART, apartBundle, asciiOnly, programBundle } from './bundle.mjs';
import { writeManPages } from './man-pages.mjs';
import { writeUnits } from './units.mjs';

rmSync('dist/bin', { recursive: true, force: true });
mkdirSync('dist/bin', { recursive: true });
const info = buildInfo();

for (const program of ['mesh-host', 'meshctl']) {
  const outfile = `dist/bin/${program}.cjs`;
  await build(programBundle({ entry: `src/programs/${program}.ts`, outfile, info, apart: true }));
  asciiOnly(outfile);
  // meshctl's cache holds what V8 compiles up front (the module wrappers, the top level); the functions
  // a command runs are compiled when first called, as without it. mesh-host's is made below, after a
  // warm-up, once the scripts it may read are built.
  if (program !== 'mesh-host') writeFileSync(`${outfile}.cache`, compileBundle(outfile).createCachedData());
}

for (const group of Object.keys(APART)) {
  const outfile = `dist/bin/apart/${group}.cjs`;
  await build(apartBundle(group, outfile));
  asciiOnly(outfile);
}

// The host's one-shot commands run with the code of a warm apply (see warm-cache.mjs).
execFileSync(process.execPath, ['scripts/warm-cache.mjs', 'dist/bin/mesh-host.cjs'], { stdio: ['ignore', 'ignore', 'inherit'] });

// packaging/ holds the service definitions the installer writes, for the default paths.
writeUnits('packaging');

// A man page for each program, from the same spec as its --help (src/cli/programs.ts, as tsc built it).
await writeManPages('dist/man', info);
