import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { digestOf, newOperatorKey, sign } from '../src/declaration/envelope.js';
import { ensureWire } from '../src/link/control.js';
import { DECLARATIONS_BUCKET, heartbeatSubject, reportMessageId, reportSubject } from '../src/link/wire.js';
import { NatsServer, natsUnavailable } from '../test/support/nats.js';
import { spawnSync } from 'node:child_process';
import { projectDir } from '../test/support/cli.js';
import { loadavg } from 'node:os';
import { median } from './stats.js';
import { newNkeySeed } from '../src/declaration/nkey.js';
import { reportSigner, type ReportSigner } from '../src/link/report-trust.js';
import { Enrolments } from '../src/link/enrolment.js';

const NODES = 1000;

const signers = new Map<string, ReportSigner>();

/**
 * Puts every simulated node's key, `reports` reports each (only the last counts) and one heartbeat.
 * Each node has its own key, pinned in the enrolments as the bundle step pins it, and signs its reports
 * as a host does: the view checks every node's newest report against its key.
 */
export async function populate(nc: NatsConnection, reports: number, firstSequence: number): Promise<void> {
  const { seed } = await newOperatorKey();
  const kv = await new Kvm(nc).open(DECLARATIONS_BUCKET);
  const js = jetstream(nc);
  const enrolments = await Enrolments.open(nc);
  const at = new Date().toISOString();
  for (let batch = 0; batch < NODES; batch += 100) {
    await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const node = `sim-${String(batch + i).padStart(4, '0')}`;
        const payload = Buffer.from(JSON.stringify({ version: 1, node, mode: 'converged', epoch: 1, sequence: 1, resources: [] }));
        const applied = { epoch: 1, sequence: 1, digest: digestOf(payload) };
        if (firstSequence === 1) {
          signers.set(node, reportSigner(newNkeySeed('node')) as ReportSigner);
          await enrolments.pin(node, signers.get(node)!.publicKey);
          await kv.put(node, JSON.stringify(await sign(payload, seed)));
        }
        const signer = signers.get(node)!;
        for (let r = 0; r < reports; r++) {
          const sequence = firstSequence + r;
          const report = { node, sequence, trigger: 'reconcile', declaration: applied, mode: 'converged', outcome: 'converged', steps: [], said: [], facts: { held: [], links: [], filters: [], foundFirewall: null }, startedAt: at, finishedAt: at };
          const bytes = Buffer.from(JSON.stringify(report));
          const signature = headers();
          for (const [name, value] of Object.entries(signer.headersFor(bytes))) signature.set(name, value);
          await js.publish(reportSubject(node), bytes, { msgID: reportMessageId(node, sequence), headers: signature, timeout: 30_000 });
        }
        nc.publish(heartbeatSubject(node), JSON.stringify({ node, reportSequence: firstSequence + reports - 1, lastApplied: applied, uptimeSeconds: 1, intervalMs: 3_600_000 }));
      }),
    );
  }
  await nc.flush();
}

/** Wall and CPU (user + system) of the whole process, medians: CPU time is what a loaded machine disturbs least. */
function timeStatus(url: string, runs: number): { wall: number; cpu: number } {
  const walls: number[] = [];
  const cpus: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const r = spawnSync('/usr/bin/time', ['-f', '%U %S', process.execPath, `${projectDir}bin/meshctl`, 'status', '--server', url, '--json', '--log-level', 'warn'], { encoding: 'utf8', maxBuffer: 64 << 20 });
    walls.push(performance.now() - started);
    const [user, system] = r.stderr.trim().split('\n').pop()!.split(' ').map(Number);
    cpus.push((user! + system!) * 1000);
    const rows = (JSON.parse(r.stdout) as { nodes: { signature?: string }[] }).nodes;
    const verified = rows.filter((row) => row.signature === 'verified').length;
    if (r.status !== 0 || rows.length !== NODES || verified !== NODES) throw new Error(`meshctl status: exit ${r.status}, ${rows.length} nodes, ${verified} verified: ${r.stderr}`);
  }
  return { wall: median(walls), cpu: median(cpus) };
}

/** `meshctl status` (the whole process) over 1,000 simulated nodes, with one and with ten reports a node kept. */
export async function benchFleet(): Promise<string[]> {
  const unavailable = natsUnavailable();
  if (unavailable) return ['## The fleet view', '', `Not measured: ${unavailable}.`];
  const server = await NatsServer.start();
  const nc = await connect({ servers: [server.url] });
  try {
    await ensureWire(nc);
    await populate(nc, 1, 1);
    const one = timeStatus(server.url, 7);
    await populate(nc, 9, 2);
    const ten = timeStatus(server.url, 7);
    return [
      '## The fleet view (`meshctl status`, 1,000 simulated nodes, a real nats-server on loopback)',
      '',
      'The whole `meshctl status --json` process (Node start-up, connecting, reading the last message per subject of the',
      'reports, heartbeats and declarations streams, the view), median of 7 runs; CPU is the process\'s user + system time.',
      `Load average while measuring: ${loadavg().map((x) => x.toFixed(1)).join(', ')} (2 cores).`,
      '',
      '| reports kept a node | wall | CPU | target |',
      '| ---: | ---: | ---: | ---: |',
      `| 1 | ${Math.round(one.wall)} ms | ${Math.round(one.cpu)} ms | under 2 s |`,
      `| 10 (10,000 in the stream) | ${Math.round(ten.wall)} ms | ${Math.round(ten.cpu)} ms | under 2 s, not growing with the history |`,
    ];
  } finally {
    await nc.close();
    await server.stop();
  }
}
