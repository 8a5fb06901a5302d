// Writes dist/man/mesh-host.1 and dist/man/meshctl.1 from the programs' specs (src/cli/programs.ts), the
// same source as their --help, through src/cli/man-page.ts as tsc built them into dist/src.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { commitTime } from './build-info.mjs';

export async function writeManPages(dir, info) {
  const { manPage } = await import('../dist/src/cli/man-page.js');
  const { meshHostProgram, meshctlProgram } = await import('../dist/src/cli/programs.js');
  const date = new Date(commitTime() * 1000).toISOString().slice(0, 10);
  mkdirSync(dir, { recursive: true });
  for (const spec of [meshHostProgram, meshctlProgram]) {
    writeFileSync(join(dir, `${spec.name}.1`), manPage(spec, { version: info.version, date }));
  }
}
