import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { newOperatorKey, sign } from '../src/core/declaration/envelope.js';
import { ensureWire } from '../src/link/control.js';
import { DECLARATIONS_BUCKET } from '../src/link/wire.js';
import { Enrolments } from '../src/link/enrolment.js';
import { newNkeySeed, nkeySeed } from '../src/core/declaration/nkey.js';
import { curvePublicKey, newCurveSeed } from '../src/core/declaration/sealed.js';
import { signSealingKey, type SealingClaim } from '../src/link/sealing-trust.js';
import { NatsServer, natsUnavailable } from '../test/support/nats.js';
import { projectDir } from '../test/support/cli.js';
import { loadAverage, median } from './stats.js';
import { timeProcess } from './fleet.js';

const NODES = 1000;
const RUNS = 5;

/** Every node enrolled as `meshctl node-key` enrols it (its key pinned, its curve key signed beside it), its key holding a first declaration. */
async function enrol(url: string, operatorSeed: string): Promise<void> {
  const nc = await connect({ servers: [url] });
  try {
    await ensureWire(nc);
    const enrolments = await Enrolments.open(nc);
    const kv = await new Kvm(nc).open(DECLARATIONS_BUCKET);
    for (let batch = 0; batch < NODES; batch += 25) {
      await Promise.all(
        Array.from({ length: Math.min(25, NODES - batch) }, async (_, i) => {
          const node = `sim-${String(batch + i).padStart(4, '0')}`;
          const seed = newNkeySeed('node');
          const { publicKey } = nkeySeed(seed, 'node') as { publicKey: string };
          await enrolments.pin(node, publicKey, { sealing: signSealingKey(seed, curvePublicKey(newCurveSeed())!) as SealingClaim });
          await kv.put(node, JSON.stringify(await sign(Buffer.from(JSON.stringify({ version: 1, node, mode: 'converged', sequence: 1, resources: [] })), operatorSeed)));
        }),
      );
    }
  } finally {
    await nc.close();
  }
}

/**
 * `meshctl send FILE --all` to 1,000 nodes, a declaration of one file each time new (every copy is put),
 * with its content sealed to each node (`"sensitive": true`) and without, the two interleaved run by run
 * so that the machine's load falls on both alike.
 */
export async function benchFleetSend(): Promise<string[]> {
  const heading = '## One send to 1,000 nodes, with a sealed value and without (`meshctl send --all`)';
  const unavailable = natsUnavailable();
  if (unavailable) return [heading, '', `Not measured: ${unavailable}.`];
  const server = await NatsServer.start();
  const dir = mkdtempSync(join(tmpdir(), 'mesh-host-bench-send-'));
  try {
    const key = await newOperatorKey();
    const seedFile = join(dir, 'operator.nk');
    writeFileSync(seedFile, `${key.seed}\n`, { mode: 0o600 });
    await enrol(server.url, key.seed);
    const loadBefore = loadAverage();
    const send = (sensitive: boolean, round: number) => {
      const file = join(dir, `${sensitive ? 'sealed' : 'plain'}-${round}.json`);
      writeFileSync(file, JSON.stringify({ version: 1, mode: 'converged', resources: [{ type: 'file', id: 'token', path: '/etc/app/token', content: `${randomBytes(24).toString('hex')}\n`, mode: '0600', ...(sensitive ? { sensitive: true } : {}) }] }));
      return timeProcess([join(projectDir, 'bin/meshctl'), 'send', file, '--all', '--server', server.url, '--key', seedFile, '--json', '--log-level', 'warn'], 1, (stdout, status, stderr) => {
        const sent = stdout.split('\n').filter((l) => l.includes('"outcome":"sent"')).length;
        if (status !== 0 || sent !== NODES) throw new Error(`meshctl send --all: exit ${status}, ${sent} sent: ${stderr.slice(-600)} ${stdout.slice(-600)}`);
      });
    };
    const plain: Array<{ wall: number; cpu: number }> = [];
    const sealed: Array<{ wall: number; cpu: number }> = [];
    for (let round = 0; round < RUNS; round++) {
      plain.push(send(false, round));
      sealed.push(send(true, round));
    }
    const m = (runs: Array<{ wall: number; cpu: number }>) => ({ wall: median(runs.map((r) => r.wall)), cpu: median(runs.map((r) => r.cpu)) });
    const p = m(plain);
    const s = m(sealed);
    const ratio = s.wall / p.wall;
    const ms = (x: number) => `${Math.round(x)} ms`;
    return [
      heading,
      '',
      `The whole \`meshctl send FILE --all\` process to 1,000 nodes enrolled with their curve keys, on a real nats-server on loopback;`,
      `each run's file is new (every copy is numbered, signed and put). Median of ${RUNS} runs each, the two kinds interleaved. Load average before and after: ${loadBefore} / ${loadAverage()} (2 cores).`,
      '',
      '| send | wall | CPU |',
      '| --- | ---: | ---: |',
      `| one plain file | ${ms(p.wall)} | ${ms(p.cpu)} |`,
      `| one sensitive file, sealed to each node | ${ms(s.wall)} | ${ms(s.cpu)} |`,
      '',
      `- **Sealed / plain: ${ratio.toFixed(2)}× wall, ${(s.cpu / p.cpu).toFixed(2)}× CPU** (target: within 1.2×; ${ratio <= 1.2 ? 'met' : 'missed'} on this run). Each node's box key is one native X25519 (OpenSSL) and one HSalsa20; each value one XSalsa20-Poly1305.`,
    ];
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
