import { execFileSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratch } from '../test/support/tree.js';
import { projectDir } from '../test/support/cli.js';
import { linkedHost } from './link-host.js';
import { fmt, median, percentile } from './stats.js';

const PAIRS = 450;

/**
 * This checkout's daemon against another's (LINK_AGAINST=DIR, a built checkout of an earlier commit),
 * both running at once on one server and delivered to in turn, one delivery each, the order flipped
 * every pair: the machine's load, which here moves within seconds, falls on both alike. (Rounds of 150
 * deliveries a daemon read 1.22x where this read 0.78x for the same two builds, a minute apart.) Returns
 * the rows of the comparison, or nothing without LINK_AGAINST.
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
  const linked: Array<Awaited<ReturnType<typeof linkedHost>>> = [];
  try {
    for (const side of sides) linked.push(await linkedHost(url, nodeFlags, side.program));
    for (let i = 0; i < 20; i++) for (const host of linked) await host.deliver();
    for (let pair = 0; pair < PAIRS; pair++) {
      for (const i of pair % 2 === 0 ? [0, 1] : [1, 0]) sides[i]!.ms.push((await linked[i]!.deliver()).ms);
    }
  } finally {
    for (const host of linked) await host.close();
    s.cleanup();
  }
  const [mine, theirs] = sides as [typeof sides[0], typeof sides[0]];
  const commit = (dir: string) => execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const row = (label: string, f: (xs: number[]) => number) => `| ${label} | ${fmt(f(theirs.ms))} ms | ${fmt(f(mine.ms))} ms | ${(f(mine.ms) / f(theirs.ms)).toFixed(2)}× |`;
  return [
    `Interleaved against an earlier build (\`LINK_AGAINST=DIR npm run bench -- link\`, DIR a built checkout of ${commit(other)}; this build ${commit(projectDir)}):`,
    `${PAIRS} deliveries to each, the two daemons running at once on one server and taking turns one delivery each (the order flipped every pair).`,
    '',
    '| figure | earlier build | this build | ratio |',
    '| --- | ---: | ---: | ---: |',
    row('delivery-to-report, median', median),
    row('delivery-to-report, p99', (xs) => percentile(xs, 99)),
    row('delivery-to-report, mean', (xs) => xs.reduce((a, b) => a + b, 0) / xs.length),
  ];
}
