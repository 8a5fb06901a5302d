import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAverage } from './stats.js';

const project = fileURLToPath(new URL('../../', import.meta.url));

interface PathFigures {
  path: string;
  inputs: number;
  ms: number;
  kinds: Record<string, number>;
}

const KINDS = ['invalid', 'forged', 'wrong-node', 'stale', 'mode'];
const n = (x: number) => x.toLocaleString('en-US');

/**
 * The gate's fuzz at its full count (`npm run fuzz`: 100,000 inputs), the test file the suite runs with
 * 2,000: every input must be refused with the kind its mutation causes and leave the scratch root and
 * state directory as they were; a failure ends the run and is said here instead of a table.
 */
export async function benchFuzz(count: number): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-host-fuzz-bench-'));
  const out = join(dir, 'figures.json');
  const before = loadAverage();
  const started = Date.now();
  const vitest = join(project, 'node_modules/vitest/vitest.mjs');
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, [vitest, 'run', 'test/gate/fuzz.test.ts'], { cwd: project, stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, MESH_FUZZ_COUNT: String(count), MESH_FUZZ_FIGURES: out } });
    child.once('exit', (c) => resolve(c));
  });
  const wall = (Date.now() - started) / 1000;
  const after = loadAverage();
  try {
    const figures = code === 0 ? (JSON.parse(readFileSync(out, 'utf8')) as PathFigures[]) : [];
    const total = figures.reduce((sum, f) => sum + f.inputs, 0);
    const kindsOf = (f: Pick<PathFigures, 'kinds'>) => KINDS.map((k) => n(f.kinds[k] ?? 0));
    const all = { kinds: Object.fromEntries(KINDS.map((k) => [k, figures.reduce((sum, f) => sum + (f.kinds[k] ?? 0), 0)])) };
    return [
      '## Gate fuzz: generated invalid inputs through the one gate',
      '',
      `\`MESH_FUZZ_COUNT=${count} npx vitest run test/gate/fuzz.test.ts\` (\`npm run fuzz\` runs it and writes this section; the suite runs the same test`,
      'with 2,000). Invalid declarations, envelopes and bundles made by mutating valid ones, through `apply FILE`, genesis, a',
      "delivery (the daemon's intake, then the apply) and the reconcile of a kept declaration. Each input must be refused with",
      'the kind of refusal its mutation causes (a mutation says which: a broken signature is forged, a bad field invalid, an older',
      'order stale...), say why, and leave the scratch root and state directory as they were (fingerprinted after every input).',
      '',
      ...(code === 0
        ? [
            `**${n(total)} of ${n(total)} inputs refused, each with its mutation's kind, nothing changed**, in ${Math.round(wall)} s (load ${before} before, ${after} after, 2 cores).`,
            '',
            `| path | inputs | time | per input | ${KINDS.join(' | ')} |`,
            `| --- | ---: | ---: | ---: | ${KINDS.map(() => '---:').join(' | ')} |`,
            ...figures.map((f) => `| ${f.path} | ${n(f.inputs)} | ${(f.ms / 1000).toFixed(1)} s | ${(f.ms / f.inputs).toFixed(1)} ms | ${kindsOf(f).join(' | ')} |`),
            `| all | ${n(total)} | ${(figures.reduce((s, f) => s + f.ms, 0) / 1000).toFixed(1)} s | | ${kindsOf(all).join(' | ')} |`,
          ]
        : [`**Failed** (vitest exit ${code}) after ${Math.round(wall)} s: an input was accepted, refused with another kind than its mutation's, or changed the scratch folders; the run's output says which.`]),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
