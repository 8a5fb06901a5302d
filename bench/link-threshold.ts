import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV } from '@nats-io/kv';
import { cosign, openEnvelope, sign, type Envelope } from '../src/core/declaration/envelope.js';
import { pinnedKeyRoot, signerRule, type TrustRoot } from '../src/core/declaration/trust-root.js';
import { DECLARATIONS_BUCKET, heartbeatSubject, reportSubject } from '../src/link/wire.js';
import { initMesh, type InitMesh } from '../test/support/mesh-init.js';
import { projectDir } from '../test/support/cli.js';
import { LINK_FILES } from './link-host.js';
import { cpuTicks, fmt, HZ, loadAverage, median } from './stats.js';

/** Deliveries to each daemon, taking turns one each (the order flipped every pair), after 20 each to warm. */
const PAIRS = 400;
/** Signature checks in process, each way, after as many to warm. */
const CHECKS = 5000;

/** A mesh made by meshctl init, rotated once to the threshold given, with one daemon run as the unit runs it. */
interface Side {
  name: string;
  mesh: InitMesh;
  nc: NatsConnection;
  kv: KV;
  node: string;
  seeds: string[];
  daemon: ChildProcess;
  sequence: number;
  waiting: Map<number, () => void>;
}

async function sideOf(name: string, threshold: 1 | 2, nodeFlags: string[]): Promise<Side> {
  const mesh = await initMesh();
  try {
    const keys: string[] = [];
    for (const k of threshold === 2 ? ['p', 'q'] : ['p']) {
      const dir = join(mesh.dir, '..', `k-${k}`);
      const made = await mesh.meshctl(['keygen', '--out', dir]);
      if (made.code !== 0) throw new Error(made.stderr);
      keys.push(join(dir, 'operator.nk'));
    }
    const rotated = await mesh.meshctl(['trust', 'rotate', '--to', keys[0]!, ...keys.slice(1).flatMap((k) => ['--add', k]), '--threshold', String(threshold)]);
    if (rotated.code !== 0) throw new Error(rotated.stderr);
    const node = `bench-t${threshold}`;
    const host = await mesh.enrol(node, { start: false, resources: LINK_FILES, config: { reconcileIntervalMs: 3_600_000 }, ...(threshold === 2 ? { bundleArgs: ['--sign', keys[1]!] } : {}) });
    const nc = await mesh.control();
    const held = new Promise<void>((resolve) => {
      const sub = nc.subscribe(heartbeatSubject(node), {
        callback: (_e, m) => {
          if ((JSON.parse(m.string()) as { trustVersion?: number }).trustVersion !== 2) return;
          sub.unsubscribe();
          resolve();
        },
      });
    });
    // As the unit runs it: its node flags, the default log level.
    const daemon = spawn(process.execPath, [...nodeFlags, join(projectDir, 'bin/mesh-host'), 'run', ...host.flags, '--log-level', 'info'], { stdio: 'ignore' });
    await held;
    const waiting = new Map<number, () => void>();
    nc.subscribe(reportSubject(node), { callback: (_e, m) => waiting.get((JSON.parse(m.string()) as { declaration?: { sequence: number } }).declaration?.sequence ?? -1)?.() });
    return { name, mesh, nc, kv: await new Kvm(nc).open(DECLARATIONS_BUCKET), node, seeds: keys.map((k) => readFileSync(k, 'utf8').trim()), daemon, sequence: 1000, waiting };
  } catch (err) {
    await mesh.close();
    throw err;
  }
}

/** The next sequence, signed beforehand by every key of the side (one or two), put, and its report awaited. */
async function deliver(side: Side): Promise<void> {
  const s = ++side.sequence;
  let envelope: Envelope = await sign(Buffer.from(JSON.stringify({ version: 1, node: side.node, mode: 'converged', sequence: s, resources: LINK_FILES })), side.seeds[0]!);
  for (const seed of side.seeds.slice(1)) envelope = cosign(envelope, seed);
  const heard = new Promise<void>((resolve) => side.waiting.set(s, resolve));
  await side.kv.put(side.node, JSON.stringify(envelope));
  await heard;
  side.waiting.delete(s);
}

/** The signature check alone, as the daemon makes it for a delivery: CPU µs a check, one signature against two. */
async function checksInProcess(): Promise<{ one: number; two: number }> {
  const [p, q] = [await keyPair(), await keyPair()];
  const payload = Buffer.from(JSON.stringify({ version: 1, node: 'n', mode: 'converged', sequence: 2, resources: LINK_FILES }));
  const root = (keys: string[], threshold: number): TrustRoot => ({ ...pinnedKeyRoot(keys[0]!), version: 2, control: { keys, threshold } });
  const one = { envelope: await sign(payload, p.seed), rule: signerRule([root([p.key], 1)]) };
  const two = { envelope: cosign(await sign(payload, p.seed), q.seed), rule: signerRule([root([p.key, q.key], 2)]) };
  const time = (c: typeof one) => {
    for (let i = 0; i < CHECKS; i++) if (!openEnvelope(c.envelope, c.rule).ok) throw new Error('the check refused a good envelope');
    // This process's CPU time, not the clock's: on a shared machine the clock counts the time others run too.
    const t = process.cpuUsage();
    for (let i = 0; i < CHECKS; i++) openEnvelope(c.envelope, c.rule);
    const used = process.cpuUsage(t);
    return (used.user + used.system) / CHECKS;
  };
  const rounds = { one: [] as number[], two: [] as number[] };
  for (let r = 0; r < 6; r++) for (const k of r % 2 === 0 ? (['one', 'two'] as const) : (['two', 'one'] as const)) rounds[k].push(time(k === 'one' ? one : two));
  return { one: median(rounds.one), two: median(rounds.two) };
}

async function keyPair(): Promise<{ seed: string; key: string }> {
  const nkeys = await import('@nats-io/nkeys');
  const pair = nkeys.createOperator();
  return { seed: new TextDecoder().decode(pair.getSeed()), key: pair.getPublicKey() };
}

/**
 * What a delivery's verification costs under a trust root that needs two signatures against one: two
 * meshes made by meshctl init, each rotated once (to one key, threshold 1; to two keys, threshold 2), a
 * daemon on each run as the unit runs it, delivered to in turn; the daemons' CPU per delivery, and the
 * signature check alone in process.
 */
export async function linkThreshold(nodeFlags: string[]): Promise<string[]> {
  const sides: Side[] = [];
  try {
    sides.push(await sideOf('threshold 1 (one signature)', 1, nodeFlags), await sideOf('threshold 2 (two signatures)', 2, nodeFlags));
    for (let i = 0; i < 20; i++) for (const side of sides) await deliver(side);
    const before = sides.map((s) => cpuTicks(s.daemon.pid!));
    for (let pair = 0; pair < PAIRS; pair++) for (const i of pair % 2 === 0 ? [0, 1] : [1, 0]) await deliver(sides[i]!);
    const cpuMs = sides.map((s, i) => ((cpuTicks(s.daemon.pid!) - before[i]!) / HZ) * (1000 / PAIRS));
    const checks = await checksInProcess();
    const added = cpuMs[1]! - cpuMs[0]!;
    return [
      `Two meshes made by \`meshctl init\`, one rotated to a single control key (threshold 1), the other to two (threshold 2; each`,
      `delivery signed by both), a daemon on each run as the unit runs it, the same no-op declaration of 100 files delivered to`,
      `each in turn (${PAIRS} each, one at a time, the order flipped every pair, after 20 each to warm). The CPU of each daemon, all its threads:`,
      '',
      '| figure | threshold 1 | threshold 2 | added |',
      '| --- | ---: | ---: | ---: |',
      `| daemon CPU per delivery | ${fmt(cpuMs[0]!)} ms | ${fmt(cpuMs[1]!)} ms | ${fmt(added)} ms (at most 0.5 ms: ${added <= 0.5 ? 'met' : 'missed'} on this run) |`,
      `| the signature check alone (\`openEnvelope\` under the trust root's rule, in process, its CPU time, median of 6 rounds of ${CHECKS}) | ${fmt(checks.one)} µs | ${fmt(checks.two)} µs | ${fmt(checks.two - checks.one)} µs |`,
      '',
      `The daemons' CPU is read in ticks of ${1000 / HZ} ms over the ${PAIRS} deliveries each (${((1000 / HZ / PAIRS) * 1000).toFixed(0)} µs a delivery), and the two`,
      'daemons differ by more than the check itself from run to run (what the machine does meanwhile falls on them unequally); the',
      `check alone is what the second signature adds: one more Ed25519 verification of the payload. Load average at the end: ${loadAverage()} (2 cores).`,
    ];
  } finally {
    for (const s of sides) {
      if (s.daemon.exitCode === null && s.daemon.signalCode === null) {
        const exit = new Promise((r) => s.daemon.once('exit', r));
        s.daemon.kill('SIGTERM');
        await exit;
      }
      await s.mesh.close();
    }
  }
}
