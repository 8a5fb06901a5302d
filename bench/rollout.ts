import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { newOperatorKey } from '../src/core/declaration/envelope.js';
import { ensureWire } from '../src/link/control.js';
import { NatsServer, natsUnavailable } from '../test/support/nats.js';
import { projectDir } from '../test/support/cli.js';
import { SimHosts } from '../test/support/sim-hosts.js';
import { loadAverage, machine, median } from './stats.js';
import { simNode } from './scale-support.js';

const HOSTS = 1000;
const WAVES = '1,10%,50%,100%';
/** Each simulated host's own apply: its report comes this long after the delivery. */
const APPLY_MS = 250;
const RUNS = 3;
const TARGET_MS = 2000;
const ms = (x: number) => `${Math.round(x)} ms`;

/** A whole process timed without blocking this one (the simulated hosts answer from this process): wall, and CPU by /usr/bin/time. */
function timed(args: string[]): Promise<{ wall: number; cpu: number; code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn('/usr/bin/time', ['-f', '%U %S', process.execPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('exit', (code) => {
      const wall = performance.now() - started;
      const [user, system] = stderr.trim().split('\n').pop()!.split(' ').map(Number);
      resolve({ wall, cpu: (user! + system!) * 1000, code, stdout, stderr });
    });
  });
}

/**
 * `meshctl rollout FILE --all --waves 1,10%,50%,100%` (the whole process) over 1,000 simulated hosts on a
 * real nats-server. Each host hears the put to its key, takes APPLY_MS as its apply, and publishes a
 * signed report of that copy; the rollout awaits every node's report before its next wave. The hosts'
 * own time is then one apply a wave; what the rollout adds is its wall less that.
 */
export async function benchRollout(): Promise<string[]> {
  const heading = '## A rollout (`meshctl rollout --all --waves 1,10%,50%,100%`, 1,000 simulated hosts, a real nats-server on loopback)';
  const unavailable = natsUnavailable();
  if (unavailable) return [heading, '', `Not measured: ${unavailable}.`];
  const server = await NatsServer.start();
  const state = mkdtempSync('/dev/shm/mesh-rollout-');
  const nc = await connect({ servers: [server.url] });
  let sims: SimHosts | undefined;
  try {
    await ensureWire(nc);
    const nodes = Array.from({ length: HOSTS }, (_, i) => simNode(i));
    sims = await SimHosts.make(nc, nodes);
    await sims.listen(60_000, APPLY_MS);
    const key = await newOperatorKey();
    const seedFile = join(state, 'operator.nk');
    writeFileSync(seedFile, `${key.seed}\n`, { mode: 0o600 });
    const loadBefore = loadAverage();
    const bare = await timed(['-e', '0']);
    const runs: Array<{ wall: number; cpu: number }> = [];
    for (let round = 0; round < RUNS; round++) {
      const file = join(state, `app-${round}.json`);
      writeFileSync(file, JSON.stringify({ version: 1, mode: 'converged', resources: [{ type: 'file', id: 'app', path: '/etc/app.conf', content: `workers = ${round + 10}\n` }] }));
      const r = await timed([join(projectDir, 'bin/meshctl'), 'rollout', file, '--all', '--waves', WAVES, '--wait', '120s', '--server', server.url, '--key', seedFile, '--json', '--log-level', 'warn']);
      const done = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { event: string; converged?: number; nodes?: number }).find((e) => e.event === 'done');
      if (r.code !== 0 || done?.converged !== HOSTS) throw new Error(`meshctl rollout: exit ${r.code}: ${r.stdout.slice(-600)} ${r.stderr.slice(-600)}`);
      runs.push(r);
    }
    const wall = median(runs.map((r) => r.wall));
    const cpu = median(runs.map((r) => r.cpu));
    const hostsOwn = 4 * APPLY_MS;
    const added = wall - hostsOwn;
    return [
      heading,
      '',
      `The whole \`meshctl rollout\` process, as an operator runs it, median of ${RUNS} (a new content each run, so every node is sent): it claims the`,
      '1,000 nodes, splits them into waves of 1, 99, 400 and 500 by the hash of their ids, and for each wave writes its record to',
      '`mesh_rollouts`, numbers, signs and puts every copy with compare-and-set, and awaits every node\'s signed report of its copy',
      `(checked against the node's pinned key) before the next wave. The simulated hosts (test/support/sim-hosts.ts, in the benchmark's`,
      `own process) hear the put to their key, take ${APPLY_MS} ms as their apply, and report. The hosts' own time is one apply a wave,`,
      `${ms(hostsOwn)}; what the rollout adds is its wall less that. \`node -e 0\` ${ms(bare.wall)}. Load average before and after: ${loadBefore} / ${loadAverage()} (2 cores).`,
      `Machine: ${machine()}.`,
      '',
      '| process | wall | CPU | the hosts\' own time | added by the rollout | target |',
      '| --- | ---: | ---: | ---: | ---: | ---: |',
      `| \`meshctl rollout FILE --all --waves ${WAVES}\`, 1,000 hosts | ${ms(wall)} | ${ms(cpu)} | ${ms(hostsOwn)} | ${ms(added)} | under 2 s: ${added < TARGET_MS ? 'met' : 'missed'} |`,
      '',
      `- Runs: ${runs.map((r) => ms(r.wall)).join(', ')} wall; ${runs.map((r) => ms(r.cpu)).join(', ')} CPU.`,
    ];
  } finally {
    sims?.close();
    await nc.close();
    await server.stop();
    rmSync(state, { recursive: true, force: true });
  }
}
