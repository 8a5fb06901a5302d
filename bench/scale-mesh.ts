/**
 * The scale benchmark's mesh as an operator makes it: `meshctl init` (one server, or `--servers 3`),
 * its nats-servers started on their configurations (operator mode), the control side connected with
 * meshctl's own credentials, every simulated host's node key pinned in the enrolments (as `meshctl
 * node-key` pins it), and the worker processes that hold the hosts (bench/scale-worker.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectLink } from '../src/link/connect.js';
import { Enrolments } from '../src/link/enrolment.js';
import { reportSigner, type ReportSigner } from '../src/link/report-trust.js';
import { newNkeySeed } from '../src/core/declaration/nkey.js';
import { MESH_LAYOUT } from '../src/control/setup/mesh-dir.js';
import { NatsServer } from '../test/support/nats.js';
import { projectDir } from '../test/support/cli.js';
import { meshctlInit } from '../test/support/mesh-init.js';
import { patiently, quietLogger, simNode } from './scale-support.js';

/**
 * A mesh made once by `meshctl init` for every run on that many servers: each run starts its servers
 * on init's configurations with an empty JetStream store.
 */
export class BenchMesh {
  servers: NatsServer[] = [];
  private constructor(private readonly work: string, readonly dir: string, private readonly ports: number[], private readonly confs: string[]) {}

  /** The simulated hosts' credentials and node seeds (each run's own) and the account's issuing key. */
  get hostsDir(): string {
    return join(this.work, 'hosts');
  }

  static async init(count: number): Promise<BenchMesh> {
    const work = mkdtempSync(join(tmpdir(), 'mesh-scale-mesh-'));
    const dir = join(work, 'mesh');
    const { ports, confs } = await meshctlInit(dir, count);
    mkdirSync(join(work, 'hosts'), { mode: 0o700 });
    const meshFile = JSON.parse(readFileSync(join(dir, 'mesh.json'), 'utf8')) as { account: string };
    const signingSeed = readFileSync(join(dir, MESH_LAYOUT.accountSigning), 'utf8').trim();
    writeFileSync(join(work, 'hosts', 'account.json'), JSON.stringify({ publicKey: meshFile.account, signingSeed }), { mode: 0o600 });
    return new BenchMesh(work, dir, ports, confs);
  }

  /** The servers, on an empty store. */
  async start(): Promise<void> {
    rmSync(join(this.dir, 'jetstream'), { recursive: true, force: true });
    this.servers = await Promise.all(this.confs.map((conf, i) => NatsServer.start({ port: this.ports[i]!, wholeConfig: join(this.dir, conf) })));
  }

  async stop(): Promise<void> {
    for (const s of this.servers) await s.stop();
    this.servers = [];
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.work, { recursive: true, force: true });
  }

  /** The control side's connection, with meshctl's own credentials from the mesh directory. */
  control(): Promise<NatsConnection> {
    return connectLink({ servers: this.servers.map((s) => s.url), name: 'scale bench (control side)', creds: join(this.dir, MESH_LAYOUT.controlCreds) }, quietLogger());
  }
}

/** Each simulated host's own node key, new for the run, pinned in the enrolments; the seeds go to the hosts' folder. */
export async function enrolHosts(nc: NatsConnection, mesh: BenchMesh, hosts: number): Promise<void> {
  const enrolments = await Enrolments.open(nc);
  const file = join(mesh.hostsDir, 'node-keys.json');
  const seeds: Record<string, string> = {};
  for (let i = 0; i < hosts; i += 200) {
    await Promise.all(Array.from({ length: Math.min(200, hosts - i) }, async (_, j) => {
      const node = simNode(i + j);
      const seed = (seeds[node] = newNkeySeed('node'));
      await patiently(() => enrolments.pin(node, (reportSigner(seed) as ReportSigner).publicKey));
    }));
  }
  writeFileSync(file, JSON.stringify(seeds), { mode: 0o600 });
}

/** The worker processes, at most `perProcess` hosts each; `cpus` pins them (taskset's list) when given. */
export function spawnWorkers(urls: string[], hosts: number, perProcess: number, hostsDir: string, operatorKey: string, cpus?: string): ChildProcess[] {
  const workers: ChildProcess[] = [];
  // As many processes as `perProcess` needs, the hosts shared evenly between them.
  const processes = Math.ceil(hosts / perProcess);
  for (let k = 0, first = 0; k < processes; k++) {
    const count = Math.floor(hosts / processes) + (k < hosts % processes ? 1 : 0);
    const node = [process.execPath, join(projectDir, 'dist/bench/scale-worker.js'), urls.join(','), String(first), String(count), hostsDir, operatorKey];
    const [command, ...args] = cpus ? ['taskset', '-c', cpus, ...node] : node;
    workers.push(spawn(command!, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
    first += count;
  }
  return workers;
}

/** What the workers have said so far: hosts with credentials, hosts up; and the first worker's early exit. */
export interface Tally {
  creds: number;
  up: number;
  exited?: string;
}

/** Counts the workers' "creds N" and "up N" lines from the moment they start. */
export function tally(workers: ChildProcess[]): Tally {
  const t: Tally = { creds: 0, up: 0 };
  for (const worker of workers) {
    worker.stdout!.on('data', (d: Buffer) => {
      for (const m of d.toString().matchAll(/(creds|up) (\d+)/g)) t[m[1] as 'creds' | 'up'] += Number(m[2]);
    });
    let err = '';
    worker.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
    worker.once('exit', (code, signal) => (t.exited ??= `a worker exited ${code ?? signal}: ${err}`));
  }
  return t;
}

/** Waits until the tally says `word` for every host; a worker's exit, or the bound passed, rejects naming how far it got. */
export async function waitForWord(t: Tally, word: 'creds' | 'up', hosts: number, boundMs: number): Promise<void> {
  const start = performance.now();
  while (t[word] < hosts) {
    if (t.exited) throw new Error(`${t.exited} (${t[word]} of ${hosts} ${word})`);
    if (performance.now() - start > boundMs) throw new Error(`${t[word]} of ${hosts} hosts ${word === 'up' ? 'connected and listening' : 'with credentials'} after ${boundMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Ends the workers (by their own PIDs) and waits for each to be gone. */
export async function stopWorkers(workers: ChildProcess[]): Promise<void> {
  const gone = workers.map((w) => (w.exitCode === null && w.signalCode === null ? new Promise((r) => w.once('exit', r)) : undefined));
  for (const w of workers) w.kill('SIGTERM');
  await Promise.all(gone);
}
