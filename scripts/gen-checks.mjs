// Runs scripts/gen-checks.ts: esbuild bundles it (with the schema it reads) and node runs the result.
import { build } from 'esbuild';
import { mkdirSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

mkdirSync('dist', { recursive: true });
const out = resolve('dist/gen-checks.mjs');
await build({ entryPoints: ['scripts/gen-checks.ts'], outfile: out, bundle: true, format: 'esm', platform: 'node', packages: 'external', logLevel: 'warning' });
// The bundle sits in dist/; the script writes relative to its own URL, so point that at scripts/.
const { readFileSync, writeFileSync } = await import('node:fs');
writeFileSync(out, readFileSync(out, 'utf8').replaceAll('import.meta.url', JSON.stringify(pathToFileURL(resolve('scripts/gen-checks.ts')).href)));
await import(pathToFileURL(out).href);
