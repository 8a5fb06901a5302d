import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { sign } from '../src/core/declaration/envelope.js';
import { ensureWire } from '../src/link/control.js';
import { DECLARATIONS_BUCKET, REPORTS_STREAM } from '../src/link/wire.js';
import { natsUnavailable } from '../test/support/nats.js';
import { PUBLIC_FILE, SEED_FILE } from '../src/control/commands/keys-command.js';
import { projectDir } from '../test/support/cli.js';
import { cpuTicks, HZ, loadAverage, rssMb } from './stats.js';
import { patiently, phase, simNode, waitFor } from './scale-support.js';
import { BenchMesh, enrolHosts, spawnWorkers, stopWorkers, tally, waitForWord } from './scale-mesh.js';
import { keptShapeSection, runShape, shapeSection, type ShapeFigures } from './scale-shape.js';
import { scaleAnalysis, scaleIntro, scaleTables, type Cpu, type Figures } from './scale-page.js';

const CONTROL_TIMEOUT_MS = 30_000;
const PUTS_IN_FLIGHT = 200;
const STATUS_RUNS = 3;

/** Raises this process's open-file limit (its children inherit it) when the run needs more than it has. */
function raiseOpenFiles(needed: number): string {
  const soft = Number(/Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? 0);
  if (soft >= needed) return `${soft.toLocaleString('en')} open files allowed, enough`;
  const r = spawnSync('prlimit', ['--pid', String(process.pid), `--nofile=${needed}:${needed}`], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${needed} open files needed, ${soft} allowed, and prlimit failed: ${r.stderr}`);
  return `open files raised from ${soft.toLocaleString('en')} to ${needed.toLocaleString('en')} (prlimit on the benchmark's process, inherited by the servers and workers)`;
}

/** CPU seconds of each side so far: the servers, the simulated hosts' processes, the control side (this process). */
function cpuNow(serverPids: number[], workers: ChildProcess[]): Cpu {
  const ticks = (pids: number[]) => pids.reduce((a, p) => a + cpuTicks(p), 0) / HZ;
  const own = process.cpuUsage();
  return { server: ticks(serverPids), hosts: ticks(workers.map((w) => w.pid!)), control: (own.user + own.system) / 1e6 };
}
const cpuSince = (a: Cpu, b: Cpu): Cpu => ({ server: b.server - a.server, hosts: b.hosts - a.hosts, control: b.control - a.control });

/** `meshctl status --json` over the whole fleet, a whole process under GNU time: wall, CPU, peak RSS; every row checked. */
function fleetView(meshDir: string, hosts: number, cpus?: string): { s: number; cpuS: number; rssMb: number } {
  // SCALE_STATUS_PROFILE=DIR: each run's CPU profile goes there, to see where the fleet view's time goes.
  const profile = process.env.SCALE_STATUS_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.SCALE_STATUS_PROFILE}`] : [];
  const command = ['/usr/bin/time', '-f', '%e %U %S %M', process.execPath, ...profile, join(projectDir, 'bin/meshctl'), 'status', '--mesh', meshDir, '--json', '--log-level', 'warn'];
  const [program, ...args] = cpus ? ['taskset', '-c', cpus, ...command] : command;
  const t = performance.now();
  const r = spawnSync(program!, args, { encoding: 'utf8', maxBuffer: 512 << 20 });
  const s = (performance.now() - t) / 1000;
  const [, user, system, kb] = (r.stderr.trim().split('\n').pop() ?? '').split(' ').map(Number);
  const rows = (JSON.parse(r.stdout || '{"nodes":[]}') as { nodes: { signature?: string }[] }).nodes;
  if (rows.length !== hosts || rows.some((row) => row.signature !== 'verified')) throw new Error(`meshctl status: exit ${r.status}, ${rows.length} nodes: ${r.stderr.slice(-400)}`);
  return { s, cpuS: user! + system!, rssMb: kb! / 1024 };
}

/** Every host's declaration (10 files, signed beforehand: the control side's signing is not what is measured) put, `PUTS_IN_FLIGHT` at a time. */
async function putAll(nc: NatsConnection, envelopes: Array<readonly [string, string]>): Promise<void> {
  const kv = await new Kvm(jetstream(nc, { timeout: CONTROL_TIMEOUT_MS })).open(DECLARATIONS_BUCKET);
  // A put whose acknowledgement timed out may have been stored: it is looked for before it is put again.
  const putOnce = (node: string, env: string) => patiently(() => kv.put(node, env), async () => (await kv.get(node))?.string() === env);
  let next = 0;
  await Promise.all(Array.from({ length: PUTS_IN_FLIGHT }, async () => {
    while (next < envelopes.length) {
      const [node, env] = envelopes[next++]!;
      await putOnce(node, env);
    }
  }));
}

async function signedDeclarations(hosts: number, seed: string): Promise<Array<readonly [string, string]>> {
  const resources = Array.from({ length: 10 }, (_, i) => ({ type: 'file', id: `f${i}`, path: `/srv/app/f${i}.conf`, content: `key = ${i}\n` }));
  return Promise.all(Array.from({ length: hosts }, async (_, i) => {
    const node = simNode(i);
    return [node, JSON.stringify(await sign(Buffer.from(JSON.stringify({ version: 1, node, mode: 'converged', epoch: 1, sequence: 1, resources })), seed))] as const;
  }));
}

async function waitForReports(nc: NatsConnection, hosts: number, since: number): Promise<void> {
  const jsm = await jetstreamManager(nc, { timeout: CONTROL_TIMEOUT_MS });
  for (;;) {
    let stored = 0;
    await patiently(async () => (stored = (await jsm.streams.info(REPORTS_STREAM)).state.messages));
    if (stored >= hosts) return;
    if (performance.now() - since > 600_000) throw new Error(`${stored} of ${hosts} reports stored after 10 minutes`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface ScaleRun {
  hosts: number;
  servers: number;
  perProcess: number;
  /** Pinned: the servers and the control side on core 0, the simulated hosts on core 1. */
  pinned: boolean;
}

/** One run on a mesh made by meshctl init (its servers started empty): N simulated hosts in workers, a declaration put for each, until every report is stored. */
export async function runScale(mesh: BenchMesh, run: ScaleRun): Promise<Figures> {
  const files = raiseOpenFiles(run.hosts + 4096);
  await mesh.start();
  let workers: ChildProcess[] = [];
  let nc: NatsConnection | undefined;
  try {
    const serverPids = mesh.servers.map((s) => s.pid!);
    if (run.pinned) for (const pid of [...serverPids, process.pid]) spawnSync('taskset', ['-a', '-p', '-c', '0', String(pid)]);
    nc = await mesh.control();
    await waitFor(() => ensureWire(nc!));
    await step('pinning the node keys', () => enrolHosts(nc!, mesh, run.hosts));
    const seed = readFileSync(join(mesh.dir, SEED_FILE), 'utf8').trim();
    const publicKey = readFileSync(join(mesh.dir, PUBLIC_FILE), 'utf8').trim();
    const envelopes = await signedDeclarations(run.hosts, seed);
    workers = spawnWorkers(mesh.servers.map((s) => s.url), run.hosts, run.perProcess, mesh.hostsDir, publicKey, run.pinned ? '1' : undefined);
    const said = tally(workers);
    await step('issuing the credentials', () => waitForWord(said, 'creds', run.hosts, 900_000));
    const c0 = cpuNow(serverPids, workers);
    const t0 = performance.now();
    await step('connecting', () => waitForWord(said, 'up', run.hosts, 900_000));
    const connectS = (performance.now() - t0) / 1000;
    const c1 = cpuNow(serverPids, workers);
    const loadBefore = loadAverage(' ');
    const t1 = performance.now();
    await step('putting the declarations', () => putAll(nc!, envelopes));
    const putS = (performance.now() - t1) / 1000;
    await step('waiting for the reports', () => waitForReports(nc!, run.hosts, t1));
    const allReportedS = (performance.now() - t1) / 1000;
    const c2 = cpuNow(serverPids, workers);
    const loadAfter = loadAverage(' ');
    const sum = (pids: number[]) => pids.reduce((a, p) => a + rssMb(p), 0);
    const [serverRssMb, hostsRssMb] = [sum(serverPids), sum(workers.map((w) => w.pid!))];
    console.error(JSON.stringify({ hosts: run.hosts, connectS, putS, allReportedS, loadBefore, loadAfter, connectCpu: cpuSince(c0, c1), reportCpu: cpuSince(c1, c2), serverRssMb, hostsRssMb }));
    const status = [];
    for (let i = 0; i < STATUS_RUNS; i++) {
      const before = cpuNow(serverPids, workers);
      const view = await step(`meshctl status, run ${i + 1}`, async () => fleetView(mesh.dir, run.hosts, run.pinned ? '0' : undefined));
      status.push({ ...view, serverCpuS: cpuNow(serverPids, workers).server - before.server });
    }
    const died = mesh.servers.find((s) => !s.running);
    if (died) throw new Error(`the server on ${died.port} died: ${died.log.slice(-400)}`);
    return { ...run, files, loadBefore, loadAfter, connectS, putS, allReportedS, connectCpu: cpuSince(c0, c1), reportCpu: cpuSince(c1, c2), serverRssMb, hostsRssMb, status };
  } finally {
    await stopWorkers(workers);
    await nc?.close().catch(() => {});
    await mesh.stop();
  }
}

/** A phase of a run, said on stderr as it begins (a run of ten thousand hosts takes many minutes). */
function step<T>(name: string, call: () => Promise<T>): Promise<T> {
  console.error(`${new Date().toISOString()} ${name}`);
  return phase(name, call);
}

const sizes = (list: string | undefined, fallback: string) => (list ?? fallback).split(',').filter(Boolean).map(Number);

/**
 * `npm run bench -- scale`: SCALE_SIZES (default 1000,3000,10000) on one server, SCALE_CLUSTER_SIZES
 * (default 10000) on three, SCALE_PINNED_SIZES (default 10000) on one server with the server and the
 * hosts on cores of their own; SCALE_PER_PROCESS hosts a worker (default 2500); then the two ways a
 * host can hear its key at SCALE_SHAPE_SIZES (default none: the page keeps the last measured).
 */
export async function benchScale(): Promise<string[]> {
  const unavailable = natsUnavailable();
  if (unavailable) return ['## Scale', '', `Not measured: ${unavailable}.`];
  const perProcess = Number(process.env.SCALE_PER_PROCESS ?? 2500);
  const runs: ScaleRun[] = [
    ...sizes(process.env.SCALE_SIZES, '1000,3000,10000').map((hosts) => ({ hosts, servers: 1, perProcess, pinned: false })),
    ...sizes(process.env.SCALE_CLUSTER_SIZES, '10000').map((hosts) => ({ hosts, servers: 3, perProcess, pinned: false })),
    ...sizes(process.env.SCALE_PINNED_SIZES, '10000').map((hosts) => ({ hosts, servers: 1, perProcess, pinned: true })),
  ];
  const rows: Figures[] = [];
  const meshes = new Map<number, BenchMesh>();
  try {
    for (const run of runs) {
      try {
        if (!meshes.has(run.servers)) meshes.set(run.servers, await BenchMesh.init(run.servers));
        rows.push(await runScale(meshes.get(run.servers)!, run));
      } catch (err) {
        rows.push({ ...run, failed: (err as Error).message } as Figures);
      }
      // Each row as soon as it is made: a long series stopped part way still leaves its rows.
      console.error(JSON.stringify(rows.at(-1)));
    }
  } finally {
    for (const mesh of meshes.values()) await mesh.close();
  }
  const shapes: ShapeFigures[] = [];
  for (const hosts of sizes(process.env.SCALE_SHAPE_SIZES, '')) {
    for (const cluster of [false, true]) {
      for (const shape of ['subscription', 'consumer'] as const) {
        try {
          shapes.push(await runShape(shape, hosts, cluster));
        } catch (err) {
          shapes.push({ shape, hosts, servers: cluster ? 3 : 1, failed: (err as Error).message } as ShapeFigures);
        }
      }
    }
  }
  return [...scaleIntro(perProcess, PUTS_IN_FLIGHT, STATUS_RUNS), ...scaleTables(rows), '', ...scaleAnalysis(rows), '', ...(shapes.length ? shapeSection(shapes) : keptShapeSection())];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log((await benchScale()).join('\n'));
}
