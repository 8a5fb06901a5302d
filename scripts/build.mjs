// Builds the two programs as bundles. typebox alone is ~700 ES modules, and Node 20 spends a third of
// a second resolving them one by one; one bundle (split at the lazy command imports) starts in a
// fraction of that. `tsc` still emits dist/src for the tests' helper processes and the benchmarks.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';
import { buildInfo } from './build-info.mjs';
import { writeUnits } from './units.mjs';

rmSync('dist/bin', { recursive: true, force: true });

await build({
  entryPoints: { 'mesh-host': 'src/cli/mesh-host.ts', meshctl: 'src/cli/meshctl.ts' },
  outdir: 'dist/bin',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'bundle',
  legalComments: 'none',
  // Smaller bundles parse faster; names are kept so stack traces still read.
  minify: true,
  keepNames: true,
  logLevel: 'warning',
  // `--version` prints the version and the commit this was built from.
  define: { __MESH_HOST_BUILD__: JSON.stringify(buildInfo()) },
  // CommonJS dependencies (pino) call require(); give the ES bundle one.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
});

// packaging/ holds the service definitions the installer writes, for the default paths.
writeUnits('packaging');
