import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A free loopback port, asked of the kernel. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    // No port left (a benchmark's thousands of connections can use them all up): said, not thrown past the test.
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
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
