import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Where test servers listen: the ports just below the kernel's ephemeral range. A port the kernel hands
 * out itself (to `listen(0)` or to any outgoing connection, another test's included) comes from that
 * range, so it could be taken between this check and the server's own bind; these never are. Each of
 * the suite's workers (`VITEST_POOL_ID`, 1 to maxWorkers) has its own slice, so two test files running
 * at once never pick the same port either.
 */
const PORTS_BELOW = ephemeralStart();
const SPAN = 12_000;
const SLICES = 8;
const SLICE = Math.floor(SPAN / SLICES);
const slice = (Number(process.env.VITEST_POOL_ID) || 1 + Math.floor(Math.random() * SLICES)) % SLICES;
let next = Math.floor(Math.random() * SLICE);

function ephemeralStart(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32_768;
  } catch {
    return 32_768;
  }
}

/** Whether nothing listens on `port` on loopback now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A free loopback port outside the kernel's ephemeral range, in this worker's own slice. */
export async function freePort(): Promise<number> {
  for (let tried = 0; tried < SLICE; tried++) {
    const port = PORTS_BELOW - SPAN + slice * SLICE + (next++ % SLICE);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${PORTS_BELOW - SPAN + slice * SLICE}-${PORTS_BELOW - SPAN + (slice + 1) * SLICE - 1}`);
}

export function natsUnavailable(): string | undefined {
  return spawnSync('nats-server', ['--version']).error ? 'nats-server is not installed (apt-get install nats-server)' : undefined;
}

const live = new Set<ChildProcess>();
process.once('exit', () => live.forEach((p) => p.kill('SIGKILL')));

/** Debian's nats-server on a free loopback port, JetStream in a temporary folder; restartable on the same port and store. */
export class NatsServer {
  private proc?: ChildProcess;
  readonly dir = mkdtempSync(join(tmpdir(), 'mesh-host-nats-'));
  log = '';

  private constructor(readonly port: number, private readonly extra: string[], private readonly whole = false) {}

  /**
   * `configFile` adds a configuration to the test's own listening and JetStream flags; `wholeConfig`
   * runs the server on that configuration alone (one made by `meshctl init`: its port must be `port`).
   */
  static async start(options: { name?: string; port?: number; cluster?: { port: number; routes: number[] }; configFile?: string; wholeConfig?: string } = {}): Promise<NatsServer> {
    const port = options.port ?? (await freePort());
    if (options.wholeConfig) {
      const server = new NatsServer(port, ['-c', options.wholeConfig], true);
      await server.run();
      return server;
    }
    const extra = options.configFile ? ['-c', options.configFile] : options.cluster
      ? ['--name', options.name ?? `n${port}`, '--cluster_name', 'mesh', '--cluster', `nats://127.0.0.1:${options.cluster.port}`, '--routes', options.cluster.routes.map((p) => `nats://127.0.0.1:${p}`).join(',')]
      : [];
    const server = new NatsServer(port, extra);
    await server.run();
    return server;
  }

  get running(): boolean {
    return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** The server's process id while it runs (a benchmark reads its CPU and memory, or pins it to a core). */
  get pid(): number | undefined {
    return this.running ? this.proc!.pid : undefined;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async run(): Promise<void> {
    const args = this.whole ? this.extra : ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', this.dir, ...this.extra];
    const proc = spawn('nats-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = proc;
    // A restart is ready when this run says so, not because the last one did.
    this.log = '';
    live.add(proc);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`nats-server on ${this.port} did not start:\n${this.log}`)), 15_000);
      const onData = (d: Buffer) => {
        this.log = (this.log + d.toString()).slice(-8000);
        if (this.log.includes('Server is ready')) {
          clearTimeout(timer);
          resolve();
        }
      };
      proc.stderr!.on('data', onData);
      proc.stdout!.on('data', onData);
      proc.once('exit', (code) => reject(new Error(`nats-server exited ${code}:\n${this.log}`)));
    });
  }

  /** kill -9, as a crash. */
  async kill(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill('SIGKILL');
    await new Promise((resolve) => proc.once('exit', resolve));
    live.delete(proc);
  }

  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Three servers in one JetStream cluster on loopback, every one routed to the others. */
export async function startCluster(): Promise<NatsServer[]> {
  const clients = [await freePort(), await freePort(), await freePort()];
  const routes = [await freePort(), await freePort(), await freePort()];
  return Promise.all(clients.map((port, i) => NatsServer.start({ name: `n${i}`, port, cluster: { port: routes[i]!, routes: routes.filter((_, j) => j !== i) } })));
}
