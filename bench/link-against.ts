import { execFileSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratch } from '../test/support/tree.js';
import { projectDir } from '../test/support/cli.js';
import { linkedHost } from './link-host.js';
import { fmt, median, percentile } from './stats.js';

const ROUNDS = 3;
const PER_ROUND = 150;

/**
 * This checkout's daemon against another's (LINK_AGAINST=DIR, a built checkout of an earlier commit),
 * interleaved on one server: rounds of PER_ROUND deliveries each, the two taking turns, so that the
 * machine's load falls on both alike. Returns the rows of the comparison, or nothing without LINK_AGAINST.
 */
export async function linkAgainst(url: string, nodeFlags: string[]): Promise<string[]> {
  const other = process.env.LINK_AGAINST;
  if (!other) return [];
  const s = scratch('mesh-host-link-against-');
  // The other checkout's daemon as this one runs: the same node and flags, through a wrapper it replaces.
  const wrapper = join(s.dir, 'mesh-host');
  writeFileSync(wrapper, `#!/bin/sh\nexec ${process.execPath} ${nodeFlags.join(' ')} ${join(other, 'bin/mesh-host')} "$@"\n`);
  chmodSync(wrapper, 0o755);
  const sides = [{ name: 'this checkout', dir: projectDir, program: undefined, ms: [] as number[] }, { name: 'LINK_AGAINST', dir: other, program: wrapper, ms: [] as number[] }];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
        const linked = await linkedHost(url, nodeFlags, side.program);
        try {
          for (let i = 0; i < 20; i++) await linked.deliver();
          for (let i = 0; i < PER_ROUND; i++) side.ms.push((await linked.deliver()).ms);
        } finally {
          await linked.close();
        }
      }
    }
  } finally {
    s.cleanup();
  }
  const [mine, theirs] = sides as [typeof sides[0], typeof sides[0]];
  const commit = (dir: string) => execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const row = (label: string, f: (xs: number[]) => number) => `| ${label} | ${fmt(f(theirs.ms))} ms | ${fmt(f(mine.ms))} ms | ${(f(mine.ms) / f(theirs.ms)).toFixed(2)}× |`;
  return [
    `Interleaved against an earlier build (\`LINK_AGAINST=DIR npm run bench -- link\`, DIR a built checkout of ${commit(other)}; this build ${commit(projectDir)}):`,
    `${ROUNDS} rounds of ${PER_ROUND} deliveries each, the two daemons taking turns on one server, at the same load.`,
    '',
    '| figure | earlier build | this build | ratio |',
    '| --- | ---: | ---: | ---: |',
    row('delivery-to-report, median', median),
    row('delivery-to-report, p99', (xs) => percentile(xs, 99)),
    row('delivery-to-report, mean', (xs) => xs.reduce((a, b) => a + b, 0) / xs.length),
  ];
}
