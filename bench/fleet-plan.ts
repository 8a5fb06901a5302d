import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { newOperatorKey } from '../src/core/declaration/envelope.js';
import { newNkeySeed } from '../src/core/declaration/nkey.js';
import { ensureWire } from '../src/link/control.js';
import { Enrolments } from '../src/link/enrolment.js';
import { reportSigner, type ReportSigner } from '../src/link/report-trust.js';
import { NatsServer, natsUnavailable } from '../test/support/nats.js';
import { projectDir } from '../test/support/cli.js';
import { timeProcess } from './fleet.js';
import { loadAverage } from './stats.js';
import { FLEET_FIRST_CONTENT, patiently, simNode } from './scale-support.js';

const HOSTS = 1000;
const PER_PROCESS = 334;
const TARGET_MS = 5000;
const ms = (x: number) => `${Math.round(x)} ms`;

/** The simulated hosts, in a few processes, each connected and listening; resolves when every one is up. */
async function startHosts(url: string, state: string, publicKey: string, workers: ChildProcess[]): Promise<void> {
  let up = 0;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${up} of ${HOSTS} simulated hosts up after 5 minutes`)), 300_000);
    for (let first = 0; first < HOSTS; first += PER_PROCESS) {
      const worker = spawn(process.execPath, [join(projectDir, 'dist/bench/fleet-hosts.js'), url, String(first), String(Math.min(PER_PROCESS, HOSTS - first)), state, publicKey], { stdio: ['ignore', 'pipe', 'inherit'] });
      workers.push(worker);
      worker.stdout!.on('data', (d: Buffer) => {
        for (const m of d.toString().matchAll(/up (\d+)/g)) up += Number(m[1]);
        if (up === HOSTS) {
          clearTimeout(timer);
          resolve();
        }
      });
      worker.once('exit', (code) => code && reject(new Error(`a simulated hosts' process exited ${code}`)));
    }
  });
}

/**
 * `meshctl plan --all` and `meshctl send --all` (whole processes) over 1,000 simulated hosts on a real
 * nats-server: each host answers its plan request with the real host-side plan (the signed copy checked
 * as a delivery, the apply path's dry run against its own store and root); each send signs and puts
 * 1,000 copies with compare-and-set.
 */
export async function benchFleetPlan(): Promise<string[]> {
  const unavailable = natsUnavailable();
  if (unavailable) return ['## The fleet\'s plan and send', '', `Not measured: ${unavailable}.`];
  const server = await NatsServer.start();
  const state = mkdtempSync('/dev/shm/mesh-fleet-');
  const workers: ChildProcess[] = [];
  const nc = await connect({ servers: [server.url] });
  try {
    await ensureWire(nc);
    const enrolments = await Enrolments.open(nc);
    for (let i = 0; i < HOSTS; i += 200) {
      await Promise.all(Array.from({ length: Math.min(200, HOSTS - i) }, (_, j) => patiently(() => enrolments.pin(simNode(i + j), (reportSigner(newNkeySeed('node')) as ReportSigner).publicKey, { labels: { role: 'web' } }))));
    }
    const key = await newOperatorKey();
    const seedFile = join(state, 'operator.nk');
    writeFileSync(seedFile, `${key.seed}\n`, { mode: 0o600 });
    await startHosts(server.url, state, key.publicKey, workers);
    const declaration = (content: string) => {
      const file = join(state, 'app.json');
      writeFileSync(file, JSON.stringify({ version: 1, mode: 'converged', resources: [{ type: 'file', id: 'app', path: '/etc/app.conf', content }] }));
      return file;
    };
    const meshctl = (args: string[]) => [`${projectDir}bin/meshctl`, ...args, '--all', '--server', server.url, '--key', seedFile, '--log-level', 'warn'];
    const loadBefore = loadAverage();
    const bare = timeProcess(['-e', '0'], 5, () => {});
    const planFile = declaration(FLEET_FIRST_CONTENT.replace('4', '8'));
    const plan = timeProcess(meshctl(['plan', planFile]), 5, (stdout, status, stderr) => {
      if (status !== 2 || !stdout.startsWith(`plan for ${HOSTS} nodes: ${HOSTS} would change`) || !stdout.includes(`${HOSTS} nodes: update /etc/app.conf: content (+1 −1 lines)`)) throw new Error(`meshctl plan: exit ${status}: ${stdout.slice(0, 400)} ${stderr}`);
    });
    const sends: Array<{ wall: number; cpu: number }> = [];
    for (let round = 0; round < 3; round++) {
      const file = declaration(`workers = ${10 + round}\n`);
      const one = timeProcess(meshctl(['send', file]), 1, (stdout, status, stderr) => {
        if (status !== 0 || !stdout.includes(`${HOSTS} nodes: ${HOSTS} sent, 0 skipped (unchanged), 0 refused`)) throw new Error(`meshctl send: exit ${status}: ${stdout.slice(-400)} ${stderr}`);
      });
      sends.push(one);
    }
    const send = [...sends].sort((a, b) => a.wall - b.wall)[1]!;
    return [
      '## The fleet\'s plan and send (`meshctl plan --all`, `meshctl send --all`, 1,000 simulated hosts, a real nats-server on loopback)',
      '',
      `Whole \`meshctl\` processes, as an operator runs them. The 1,000 hosts run in ${Math.ceil(HOSTS / PER_PROCESS)} processes (bench/fleet-hosts.ts), each`,
      'with the real link session, and answer each plan request with the real host-side plan: the signed copy checked as a',
      "delivery (signature against the operator's key, node, vocabulary), then the apply path's dry run against the host's",
      'own store and scratch root (one file, which the plan changes). `plan` numbers, signs and sends 1,000 copies at once and',
      'groups the answers; `send` numbers, signs and puts 1,000 copies with compare-and-set (a new content each run, so every',
      `copy is sent). Median of 5 plans and of 3 sends; \`node -e 0\` ${ms(bare.wall)}. Load average before and after: ${loadBefore} / ${loadAverage()} (2 cores).`,
      '',
      '| process | wall | CPU | target |',
      '| --- | ---: | ---: | ---: |',
      `| \`meshctl plan FILE --all\`, 1,000 hosts answering | ${ms(plan.wall)} | ${ms(plan.cpu)} | under 5 s: ${plan.wall < TARGET_MS ? 'met' : 'missed'} |`,
      `| \`meshctl send FILE --all\`, 1,000 copies | ${ms(send.wall)} | ${ms(send.cpu)} | under 5 s: ${send.wall < TARGET_MS ? 'met' : 'missed'} |`,
      '',
      "- Signing is Node's own Ed25519 with the seed parsed once: nkeys' JavaScript Ed25519 took about 45 ms a signature here, 45 s of CPU for a thousand copies (a first profile of `plan --all` showed it as nine tenths of the process).",
      '- Sends go 256 at a time (each a compare-and-set put awaiting the stream\'s acknowledgement); plan requests all at once, each with its own `--timeout`.',
    ];
  } finally {
    await nc.close();
    for (const w of workers) w.kill('SIGTERM');
    await server.stop();
    rmSync(state, { recursive: true, force: true });
  }
}
