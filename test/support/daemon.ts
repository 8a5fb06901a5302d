import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, DeliverPolicy } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { ensureWire } from '../../src/link/control.js';
import { DECLARATIONS_BUCKET, REPORTS_STREAM, reportSubject } from '../../src/link/wire.js';
import { sign } from '../../src/core/declaration/envelope.js';
import type { Report } from '../../src/engine/report/report.js';
import type { Resource } from '../../src/core/declaration/schema.js';
import { projectDir, runCli } from './cli.js';
import { childOf } from './systemd-container.js';
import { scratch } from './tree.js';

export interface HostFixture {
  node: string;
  dir: string;
  root: string;
  state: string;
  config: string;
  seed: string;
  flags: string[];
  log: () => string;
  /**
   * Runs the daemon; `via` is a command it runs under (`nsenter -t PID -a`: inside a container, whose
   * namespaces it enters and whose child the daemon is). Stopping and killing reach the daemon itself.
   */
  start(options?: { via?: string[] }): Promise<void>;
  stop(): Promise<number | null>;
  kill(): Promise<void>;
  /** Signs and puts a declaration for this node (or another one's bytes as given). */
  put(declaration: object, options?: { seed?: string; node?: string }): Promise<number>;
  reports(): Promise<Report[]>;
  waitForReports(count: number, timeoutMs?: number): Promise<Report[]>;
  /** Waits for the first report that matches; the timeout names what was awaited. */
  waitForReport(what: string, match: (report: Report) => boolean, timeoutMs?: number): Promise<Report>;
  /** Waits until the host's log holds at least `count` lines matching. */
  waitForLog(what: string, pattern: RegExp, count?: number, timeoutMs?: number): Promise<void>;
  cleanup(): Promise<void>;
}

let fixtures = 0;

export async function control(servers: string[]): Promise<NatsConnection> {
  return connect({ servers, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
}

/**
 * An enrolled host on a scratch root: keys made, a bundle for the servers given, genesis run; the
 * daemon is then started and stopped as a process (`mesh-host run`), as an operator would.
 */
/** The V8 flags the shipped unit runs the daemon with (packaging/mesh-host.service), so a measure is of the daemon as shipped. */
export function unitNodeFlags(): string[] {
  const unit = readFileSync(join(projectDir, 'packaging/mesh-host.service'), 'utf8');
  const exec = /^ExecStart=(.*)$/m.exec(unit)![1]!.trim().split(/\s+/);
  return exec.slice(1, exec.findIndex((word) => word.endsWith('/bin/mesh-host')));
}

export async function enrolledHost(servers: string[], options: {
  resources?: Resource[]; config?: object; replicas?: number; nodeFlags?: string[]; logLevel?: 'debug' | 'info';
  /** A single executable to run the daemon with, instead of this checkout's bin/mesh-host under this node. */
  program?: string;
} = {}): Promise<HostFixture> {
  const s = scratch('mesh-host-daemon-');
  const node = `node-${process.pid}-${++fixtures}`;
  const root = join(s.dir, 'root');
  mkdirSync(join(root, 'srv'), { recursive: true });
  const state = join(s.dir, 'state');
  const config = join(s.dir, 'host.json');
  const keys = join(s.dir, 'keys');
  const keygen = await runCli('meshctl', ['keygen', '--out', keys]);
  if (keygen.code !== 0) throw new Error(`meshctl keygen: ${keygen.stderr}`);
  const seed = readFileSync(join(keys, 'operator.nk'), 'utf8').trim();
  const declPath = join(s.dir, 'first.json');
  writeFileSync(declPath, JSON.stringify({ version: 1, node, mode: 'converged', epoch: 1, sequence: 1, resources: options.resources ?? [{ type: 'directory', id: 'app', path: '/srv/app' }] }));
  const bundle = join(s.dir, 'bundle.json');
  const made = await runCli('meshctl', ['bundle', declPath, '--key', join(keys, 'operator.nk'), '--server', servers.join(','), '--out', bundle]);
  if (made.code !== 0) throw new Error(made.stderr);
  const flags = ['--root', root, '--state-dir', state, '--config', config];
  const genesis = await runCli('mesh-host', ['genesis', bundle, '--mode', 'converged', ...flags, '--log-level', 'warn']);
  if (genesis.code !== 0) throw new Error(genesis.stderr);
  writeFileSync(config, JSON.stringify({ ...JSON.parse(readFileSync(config, 'utf8')), reconcileIntervalMs: 3_600_000, verifyPauseMs: 200, ...options.config }));

  const nc = await control(servers);
  await ensureWire(nc, options.replicas ? { replicas: options.replicas } : {});
  let proc: ChildProcess | undefined;
  /** The daemon's PID: the spawned process, or its child when it runs under a launcher (nsenter forks it). */
  let daemonPid: () => number | undefined = () => proc?.pid;
  const signal = (sig: NodeJS.Signals) => {
    const pid = daemonPid();
    if (pid !== undefined) process.kill(pid, sig);
  };
  let log = '';
  const fixture: HostFixture = {
    node, dir: s.dir, root, state, config, seed, flags,
    log: () => log,
    async start({ via = [] } = {}) {
      const program = options.program ? [options.program] : [process.execPath, ...(options.nodeFlags ?? []), join(projectDir, 'bin/mesh-host')];
      const command = [...via, ...program, 'run', ...flags, '--log-level', options.logLevel ?? 'debug'];
      proc = spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
      const launcher = proc;
      daemonPid = via.length === 0 ? () => launcher.pid : () => (launcher.pid === undefined ? undefined : childOf(launcher.pid));
      proc.stdout!.on('data', (d: Buffer) => (log += d.toString()));
      proc.stderr!.on('data', (d: Buffer) => (log += d.toString()));
      const started = Date.now();
      while (!log.includes('"link: connected"') && !log.includes('msg":"link: connected')) {
        if (Date.now() - started > 60_000) throw new Error(`the daemon did not connect:\n${log}`);
        if (proc.exitCode !== null) throw new Error(`the daemon exited ${proc.exitCode}:\n${log}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop() {
      if (!proc || proc.exitCode !== null) return proc?.exitCode ?? null;
      const p = proc;
      const exit = new Promise<number | null>((resolve) => p.once('exit', (code) => resolve(code)));
      signal('SIGTERM');
      return exit;
    },
    async kill() {
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
      const p = proc;
      const exit = new Promise((resolve) => p.once('exit', resolve));
      signal('SIGKILL');
      await exit;
    },
    async put(declaration, opts = {}) {
      const kv = await new Kvm(nc).open(DECLARATIONS_BUCKET);
      const envelope = await sign(Buffer.from(JSON.stringify({ version: 1, node, mode: 'converged', ...declaration })), opts.seed ?? seed);
      return kv.put(opts.node ?? node, JSON.stringify(envelope));
    },
    reports: () => reportsOf(nc, node),
    async waitForReports(count, timeoutMs = 20_000) {
      const started = Date.now();
      for (;;) {
        const got = await fixture.reports().catch(() => []);
        if (got.length >= count) return got;
        if (Date.now() - started > timeoutMs) throw new Error(`${got.length} of ${count} reports after ${timeoutMs} ms:\n${log.slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async waitForReport(what, match, timeoutMs = 20_000) {
      const started = Date.now();
      for (;;) {
        const found = (await fixture.reports().catch(() => [])).find(match);
        if (found) return found;
        if (Date.now() - started > timeoutMs) throw new Error(`no report ${what} after ${timeoutMs} ms:\n${log.slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async waitForLog(what, pattern, count = 1, timeoutMs = 20_000) {
      const started = Date.now();
      const flags = pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`;
      while ((log.match(new RegExp(pattern.source, flags)) ?? []).length < count) {
        if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what} in the host's log:\n${log.slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async cleanup() {
      await fixture.kill();
      await nc.close();
      s.cleanup();
    },
  };
  return fixture;
}

/** Every report of a node in the stream, in stream order. */
export async function reportsOf(nc: NatsConnection, node: string): Promise<Report[]> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(REPORTS_STREAM, { subjects_filter: reportSubject(node) } as never);
  const count = (info.state.subjects as Record<string, number> | undefined)?.[reportSubject(node)] ?? 0;
  if (count === 0) return [];
  const consumer = await jetstream(nc).consumers.get(REPORTS_STREAM, { filter_subjects: reportSubject(node), deliver_policy: DeliverPolicy.All });
  const out: Report[] = [];
  while (out.length < count) {
    const m = await consumer.next({ expires: 2000 });
    if (!m) break;
    out.push(JSON.parse(m.string()) as Report);
  }
  return out;
}
