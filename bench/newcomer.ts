import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDebianTree, makeFreshTree } from '../test/support/fresh-debian.js';
import { newcomerRun, type NewcomerRun } from '../test/support/newcomer.js';
import { loadAverage } from './stats.js';

const s = (ms: number) => `${(ms / 1000).toFixed(0)} s`;

/**
 * The newcomer's run of test/newcomer/fresh-machine.test.ts, timed: the fresh Debian tree made (what a
 * cold run pays once; made here in a scratch folder, so a test running over the kept tree is not
 * disturbed), then two runs over the kept tree, each a new machine, a fresh clone and try.sh.
 */
export async function benchNewcomer(): Promise<string[]> {
  const before = loadAverage();
  const scratch = mkdtempSync(join(tmpdir(), 'mesh-host-bench-newcomer-'));
  let treeMs: number;
  try {
    const start = performance.now();
    makeFreshTree(join(scratch, 'tree'));
    treeMs = performance.now() - start;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  freshDebianTree();
  const runs: NewcomerRun[] = [];
  for (let i = 0; i < 2; i++) {
    const run = await newcomerRun();
    if (run.run.code !== 0 || run.problems.length > 0) throw new Error(`the newcomer's run failed (${run.run.code}): ${run.problems.join('; ')}\n${run.run.stdout}\n${run.run.stderr}`);
    runs.push(run);
    console.error(`newcomer run ${i + 1} done`);
  }
  const total = (run: NewcomerRun) => run.ms.clone + run.ms.tryScript;
  return [
    "## A newcomer's first command on a fresh machine",
    '',
    '`npm run bench -- newcomer` times what `test/newcomer/fresh-machine.test.ts` does: a fresh Debian 12 tree (mmdebstrap `--variant=minbase`',
    "with git and ca-certificates, this machine's node and npm copied in, this image's policy-rc.d), kept in the temporary folder under",
    "a digest of what goes into it; each run is a new machine over it (an overlay), a fresh clone of the commit under test, and",
    '`bash scripts/try.sh` inside under systemd-nspawn, which installs every Debian package the suite needs, runs `npm ci` (the build',
    'included) and the loop. Nothing but the tree is kept between runs: apt and npm download everything again.',
    '',
    '| run | the tree made | machine and clone | `bash scripts/try.sh` | the test |',
    '| --- | ---: | ---: | ---: | ---: |',
    `| cold (no tree kept) | ${s(treeMs)} | ${s(runs[0]!.ms.clone)} | ${s(runs[0]!.ms.tryScript)} | ${s(treeMs + total(runs[0]!))} |`,
    ...runs.map((run, i) => `| warm, run ${i + 1} (the tree kept) | — | ${s(run.ms.clone)} | ${s(run.ms.tryScript)} | ${s(total(run))} |`),
    '',
    `Load average before and after: ${before} / ${loadAverage()} (2 cores). The cold row is the tree made here and the first run's own times.`,
  ];
}
