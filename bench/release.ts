import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { declarationOf } from './converge.js';
import { fmt, median, wallProcess } from './stats.js';

const project = fileURLToPath(new URL('../../', import.meta.url));
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;

/**
 * The single executables of `npm run release` (made first when dist/release has none): their sizes,
 * plain and gzip -9, and the start-up of `--version` and of a no-op apply of 1,000 files against the
 * bundled script run by `node`, interleaved.
 */
export async function benchRelease(runs = 11): Promise<string[]> {
  const out = join(project, 'dist/release');
  if (!existsSync(join(out, 'mesh-host'))) execFileSync(process.execPath, ['scripts/release.mjs'], { cwd: project, stdio: 'inherit' });
  const sea = join(out, 'mesh-host');
  const script = join(project, 'bin/mesh-host');
  const tarball = readdirSync(out).find((f) => f.endsWith('.tar.gz'))!;
  const sizes = ['mesh-host', 'meshctl'].map((f) => ({ f, plain: statSync(join(out, f)).size, gz: gzipSync(readFileSync(join(out, f)), { level: 9 }).length }));

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
    const timed = { seaVersion: [] as number[], nodeVersion: [] as number[], seaApply: [] as number[], nodeApply: [] as number[] };
    for (let i = 0; i < runs; i++) {
      timed.nodeVersion.push(wallProcess(process.execPath, [script, '--version']).ms);
      timed.seaVersion.push(wallProcess(sea, ['--version']).ms);
      timed.nodeApply.push(wallProcess(process.execPath, [script, 'apply', decl, ...flags]).ms);
      timed.seaApply.push(wallProcess(sea, ['apply', decl, ...flags]).ms);
    }
    const row = (what: string, seaMs: number[], nodeMs: number[]) => `| ${what} | ${fmt(median(seaMs))} ms | ${fmt(median(nodeMs))} ms | ${(median(seaMs) / median(nodeMs)).toFixed(2)}× |`;
    return [
      '## The single executables',
      '',
      '`npm run release`: Node\'s single executable applications (the node binary, its symbol tables stripped, with the bundled program injected).',
      '',
      '| file | size | gzip -9 |',
      '| --- | ---: | ---: |',
      ...sizes.map((s) => `| \`${s.f}\` | ${mb(s.plain)} | ${mb(s.gz)} |`),
      `| \`${tarball}\` (both, the unit, the OpenRC script) | ${mb(statSync(join(out, tarball)).size)} | — |`,
      '',
      `Start-up, median of ${runs} interleaved runs (load average ${load} when they began): the single executable against the bundled script run by \`node\` (\`bin/mesh-host\`).`,
      '',
      '| command | single executable | `node bin/mesh-host` | ratio |',
      '| --- | ---: | ---: | ---: |',
      row('`mesh-host --version`', timed.seaVersion, timed.nodeVersion),
      row('`mesh-host apply` of 1,000 files, nothing to change', timed.seaApply, timed.nodeApply),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
