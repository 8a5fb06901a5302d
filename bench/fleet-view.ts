import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { ensureWire } from '../src/link/control.js';
import { NatsServer, natsUnavailable } from '../test/support/nats.js';
import { projectDir } from '../test/support/cli.js';
import { populate } from './fleet.js';
import { HZ, loadAverage, median } from './stats.js';

/** The fleet view's target at ten thousand nodes: the whole `meshctl status` within 3 s. */
const TARGET_S = 3;

interface Run {
  wallS: number;
  cpuS: number;
  /** The main thread's own CPU: what a quiet machine's wall cannot go under, the checks' threads aside. */
  mainS: number;
  rssMb: number;
}

/** Loaded before the command: at its exit, prints its main thread's CPU (user + system) from /proc. */
const MAIN_THREAD_CPU = `data:text/javascript,import { readFileSync } from 'node:fs'; process.on('exit', () => { const f = readFileSync('/proc/self/task/' + process.pid + '/stat', 'utf8'); const t = f.slice(f.lastIndexOf(')') + 2).split(' '); process.stderr.write('main-thread-cpu ' + (Number(t[11]) + Number(t[12])) / ${HZ} + '\\n'); });`;

/** One `meshctl status --json` of a checkout (its bin/meshctl) under GNU time; every row must be there and verified. */
function statusOnce(dir: string, url: string, nodes: number): Run {
  // FLEET_VIEW_PROFILE=DIR: each run's CPU profile goes there, to see where the view's time goes.
  const profile = process.env.FLEET_VIEW_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.FLEET_VIEW_PROFILE}`] : [];
  const started = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S %M', process.execPath, '--import', MAIN_THREAD_CPU, ...profile, join(dir, 'bin/meshctl'), 'status', '--server', url, '--json', '--log-level', 'warn'], { encoding: 'utf8', maxBuffer: 512 << 20 });
  const wallS = (performance.now() - started) / 1000;
  const [user, system, kb] = (r.stderr.trim().split('\n').pop() ?? '').split(' ').map(Number);
  const rows = (JSON.parse(r.stdout || '{"nodes":[]}') as { nodes: { signature?: string }[] }).nodes;
  if (r.status !== 0 || rows.length !== nodes || rows.some((row) => row.signature !== 'verified')) throw new Error(`${dir}: meshctl status: exit ${r.status}, ${rows.length} nodes: ${r.stderr.slice(-400)}`);
  const mainS = Number(/^main-thread-cpu (\S+)$/m.exec(r.stderr)?.[1]);
  return { wallS, cpuS: user! + system!, mainS, rssMb: kb! / 1024 };
}

/** The commit a checkout was built from: its git HEAD, or the COMMIT file a `git archive` copy is given. */
function commitOf(dir: string): string {
  if (existsSync(join(dir, 'COMMIT'))) return readFileSync(join(dir, 'COMMIT'), 'utf8').trim();
  return execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
}

const s = (x: number) => `${x.toFixed(2)} s`;

/**
 * `meshctl status` over 1,000 and 10,000 simulated nodes (FLEET_VIEW_SIZES), each node with its key pinned,
 * a signed declaration, a signed report and a heartbeat, on a plain nats-server: this build, and with
 * FLEET_VIEW_AGAINST=DIR (a built copy of an earlier commit) that build too, taking turns run by run
 * over the same server, so the machine's load falls on both alike; the ratios are what compare.
 */
export async function benchFleetView(): Promise<string[]> {
  const heading = '## The fleet view over 10,000 nodes (`meshctl status`, a real nats-server on loopback)';
  const unavailable = natsUnavailable();
  if (unavailable) return [heading, '', `Not measured: ${unavailable}.`];
  const sizes = (process.env.FLEET_VIEW_SIZES ?? '1000,10000').split(',').map(Number);
  const rounds = Number(process.env.FLEET_VIEW_ROUNDS ?? 5);
  const against = process.env.FLEET_VIEW_AGAINST;
  const builds = [{ name: 'this build', dir: projectDir }, ...(against ? [{ name: 'earlier build', dir: against }] : [])];
  const rows: string[] = [];
  const notes: string[] = [];
  for (const nodes of sizes) {
    const server = await NatsServer.start();
    const nc = await connect({ servers: [server.url] });
    try {
      await ensureWire(nc);
      await populate(nc, 1, 1, nodes);
      const loadBefore = loadAverage();
      const runs = new Map<string, Run[]>(builds.map((b) => [b.name, []]));
      statusOnce(projectDir, server.url, nodes); // warms the server's caches for both
      for (let round = 0; round < rounds; round++) {
        for (const build of round % 2 === 0 ? builds : [...builds].reverse()) runs.get(build.name)!.push(statusOnce(build.dir, server.url, nodes));
      }
      const of = (name: string, f: (r: Run) => number) => median(runs.get(name)!.map(f));
      const ratio = (f: (r: Run) => number) => (of('this build', f) / of('earlier build', f)).toFixed(2);
      for (const build of builds) {
        const compared = against && build.name === 'this build' ? `${ratio((r) => r.wallS)}× / ${ratio((r) => r.cpuS)}× / ${ratio((r) => r.mainS)}×` : '—';
        const walls = runs.get(build.name)!.map((r) => r.wallS.toFixed(1)).join(', ');
        rows.push(`| ${nodes.toLocaleString('en')} | ${build.name} (${commitOf(build.dir)}) | ${s(of(build.name, (r) => r.wallS))} | ${s(of(build.name, (r) => r.cpuS))} | ${s(of(build.name, (r) => r.mainS))} | ${Math.round(of(build.name, (r) => r.rssMb))} MB | ${walls} | ${compared} |`);
      }
      const wall = of('this build', (r) => r.wallS);
      notes.push(`- **${nodes.toLocaleString('en')} nodes: \`meshctl status\` ${s(wall)}** (median of ${rounds}; target ${TARGET_S} s: ${wall <= TARGET_S ? 'met' : 'missed'}), ${s(of('this build', (r) => r.cpuS))} of its CPU; load ${loadBefore} before, ${loadAverage()} after.`);
    } finally {
      await nc.close();
      await server.stop();
    }
  }
  return [
    heading,
    '',
    'The whole `meshctl status --json` process (Node start-up, connecting, reading the newest report, heartbeat, key and enrolment',
    "of every node, checking every newest report's signature against its node's pinned key, the view), under GNU time: wall, CPU",
    "(user + system, every thread), the main thread's own CPU (from /proc at its exit: the floor of a quiet machine's wall, since",
    "the signature checks run on other threads) and peak RSS, medians. Every row is checked to be there and verified.",
    against ? `The earlier build (FLEET_VIEW_AGAINST) and this one take turns, run by run, on the same server; the ratio is this build's over the earlier one's.` : 'Run without FLEET_VIEW_AGAINST: no earlier build beside it.',
    `Command: \`${against ? 'FLEET_VIEW_AGAINST=DIR ' : ''}npm run bench -- fleet-view\` (FLEET_VIEW_SIZES, FLEET_VIEW_ROUNDS narrow it). 2 cores shared with other work.`,
    '',
    '| nodes | build | wall | CPU | main thread CPU | peak RSS | each run\'s wall (s) | ratio to the earlier build: wall / CPU / main thread |',
    '| ---: | --- | ---: | ---: | ---: | ---: | --- | ---: |',
    ...rows,
    '',
    ...notes,
  ];
}
