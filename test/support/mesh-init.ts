import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { freePort, NatsServer } from './nats.js';
import { projectDir, runCli } from './cli.js';
import { scratch } from './tree.js';
import type { RunResult } from '../../src/core/system/runner.js';
import { heartbeatSubject } from '../../src/link/wire.js';

/** One host of a mesh made by `meshctl init`: its own key, credentials and bundle, its daemon as a process. */
export interface InitHost {
  node: string;
  root: string;
  state: string;
  flags: string[];
  /** The credentials node-creds gave it, where its configuration names them. */
  creds: string;
  log: () => string;
  stop(): Promise<void>;
  /** Starts its daemon again after stop(), and waits for its link. */
  start(): Promise<void>;
}

export interface EnrolOptions {
  labels?: string[];
  resources?: object[];
  start?: boolean;
  /** The server the host connects to (a site's leaf node); the mesh's own servers otherwise. */
  server?: string;
  /** More of the host's configuration. */
  config?: object;
  /** More flags for meshctl bundle (another key's signature under a threshold of 2, say). */
  bundleArgs?: string[];
}

/** A mesh as a newcomer makes it: `meshctl init` (one server or a cluster), its servers started on free loopback ports. */
export interface InitMesh {
  dir: string;
  servers: NatsServer[];
  /** meshctl with the mesh directory's defaults: no --server, --creds or --key. */
  meshctl(args: string[], options?: { timeoutMs?: number }): Promise<RunResult>;
  /** node-key (with labels), node-creds, bundle, genesis and `mesh-host run`, each as an operator types it. */
  enrol(node: string, options?: EnrolOptions): Promise<InitHost>;
  /** Where each server takes sites' leaf nodes. */
  leafPorts: number[];
  /** A connection to every server with meshctl's credentials, as the control side reads the mesh; closed by close(). */
  control(): Promise<NatsConnection>;
  close(): Promise<void>;
}

const must = (what: string, r: RunResult) => {
  if (r.code !== 0) throw new Error(`${what}: exit ${r.code}\n${r.stderr}\n${r.stdout}`);
  return r;
};

/**
 * `meshctl init DIR --servers N` with free loopback ports for each server's clients, routes and leaf nodes
 * (two meshes made at once must not meet on a port); the servers' ports and their configurations' names.
 */
export async function meshctlInit(dir: string, count: number): Promise<{ ports: number[]; leafPorts: number[]; confs: string[] }> {
  const ports: number[] = [];
  const routes: number[] = [];
  const leafPorts: number[] = [];
  for (let i = 0; i < count; i++) {
    ports.push(await freePort());
    routes.push(await freePort());
    leafPorts.push(await freePort());
  }
  must('meshctl init', await runCli('meshctl', ['init', dir, '--servers', String(count), '--port', ports.join(','), '--cluster-port', routes.join(','), '--leaf-port', leafPorts.join(','), '--log-level', 'warn']));
  const confs = count === 1 ? ['nats-server.conf'] : ports.map((_, i) => `nats-server-${i + 1}.conf`);
  return { ports, leafPorts, confs };
}

export async function initMesh(options: { servers?: number } = {}): Promise<InitMesh> {
  const count = options.servers ?? 1;
  const work = scratch('mesh-host-init-');
  const dir = join(work.dir, 'mesh');
  const { ports, leafPorts, confs } = await meshctlInit(dir, count);
  const servers = await Promise.all(confs.map((conf, i) => NatsServer.start({ port: ports[i]!, wholeConfig: join(dir, conf) })));
  const hosts: InitHost[] = [];
  const meshctl = (args: string[], o: { timeoutMs?: number } = {}) => runCli('meshctl', [...args, '--mesh', dir], o);

  async function enrol(node: string, o: EnrolOptions = {}): Promise<InitHost> {
    const at = (name: string) => join(work.dir, node, name);
    mkdirSync(at('root/srv'), { recursive: true });
    must('node-key', await meshctl(['node-key', node, '--out', at('node.nk'), ...(o.labels ?? []).flatMap((l) => ['--label', l])]));
    must('node-creds', await meshctl(['node-creds', node, '--out', at('node.creds')]));
    writeFileSync(at('first.json'), JSON.stringify({ version: 1, node, mode: 'converged', resources: o.resources ?? [] }));
    must('bundle', await meshctl(['bundle', at('first.json'), '--node-key', at('node.nk'), '--embed-creds', at('node.creds'), ...(o.server ? ['--host-server', o.server] : []), ...(o.bundleArgs ?? []), '--out', at('bundle.json')]));
    const flags = ['--root', at('root'), '--state-dir', at('state'), '--config', at('host.json')];
    must('genesis', await runCli('mesh-host', ['genesis', at('bundle.json'), '--mode', 'converged', ...flags, '--log-level', 'warn']));
    writeFileSync(at('host.json'), JSON.stringify({ ...JSON.parse(readFileSync(at('host.json'), 'utf8')), heartbeatMs: 1000, reconcileIntervalMs: 3_600_000, verifyPauseMs: 100, ...o.config }));
    let log = '';
    let proc: ChildProcess | undefined;
    const start = async () => {
      const from = log.length;
      proc = spawn(process.execPath, [join(projectDir, 'bin/mesh-host'), 'run', ...flags, '--log-level', 'debug'], { stdio: ['ignore', 'pipe', 'pipe'] });
      proc.stdout!.on('data', (d: Buffer) => (log += d.toString()));
      proc.stderr!.on('data', (d: Buffer) => (log += d.toString()));
      const started = Date.now();
      while (!log.slice(from).includes('link: connected')) {
        if (Date.now() - started > 60_000) throw new Error(`${node}'s daemon did not connect:\n${log}`);
        if (proc.exitCode !== null) throw new Error(`${node}'s daemon exited ${proc.exitCode}:\n${log}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    if (o.start !== false) await start();
    const host: InitHost = {
      node,
      root: at('root'),
      state: at('state'),
      flags,
      creds: at('node.creds'),
      log: () => log,
      async stop() {
        if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
        const p = proc;
        const exit = new Promise((r) => p.once('exit', r));
        p.kill('SIGTERM');
        await exit;
      },
      start,
    };
    hosts.push(host);
    return host;
  }

  const controls: NatsConnection[] = [];
  async function control(): Promise<NatsConnection> {
    const nc = await connect({ servers: servers.map((s) => s.url), authenticator: credsAuthenticator(readFileSync(join(dir, 'meshctl.creds'))) });
    controls.push(nc);
    return nc;
  }

  return {
    dir,
    servers,
    leafPorts,
    meshctl,
    enrol,
    control,
    async close() {
      for (const nc of controls) await nc.close();
      for (const h of hosts) await h.stop();
      for (const s of servers) await s.stop();
      work.cleanup();
    },
  };
}

/** Waits for the host's file to hold `content` (the event itself, polled), failing with the host's log. */
export async function untilFile(host: InitHost, path: string, content: string, timeoutMs = 30_000): Promise<void> {
  const started = Date.now();
  const at = join(host.root, path);
  while (!(existsSync(at) && readFileSync(at, 'utf8') === content)) {
    if (Date.now() - started > timeoutMs) throw new Error(`${host.node} did not apply ${path}:\n${host.log().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A site made by `meshctl init --leaf SITE` (its uplink dialling `hub` when given), its leaf node
 * started, and `meshctl site` run once the leaf has connected (within a second or so; until then the hub
 * cannot reach its domain): the leaf's server, and what `meshctl site` said.
 */
export async function startSite(mesh: InitMesh, site: string, options: { hub?: string } = {}): Promise<{ leaf: NatsServer; said: string }> {
  const leafPort = await freePort();
  const made = await mesh.meshctl(['init', '--leaf', site, '--port', String(leafPort), ...(options.hub ? ['--hub', options.hub] : [])]);
  if (made.code !== 0) throw new Error(`meshctl init --leaf ${site} exited ${made.code}: ${made.stderr}`);
  const leaf = await NatsServer.start({ port: leafPort, wholeConfig: join(mesh.dir, 'sites', site, 'nats-server.conf') });
  let answer = await mesh.meshctl(['site', site]);
  for (let tries = 0; answer.code !== 0 && tries < 20; tries++) {
    await new Promise((r) => setTimeout(r, 500));
    answer = await mesh.meshctl(['site', site]);
  }
  if (answer.code !== 0) throw new Error(`meshctl site ${site} exited ${answer.code}: ${answer.stderr}`);
  return { leaf, said: answer.stdout };
}

/** The node's first heartbeat after the call that says it holds this trust version. */
export function holdsTrust(control: NatsConnection, node: string, version: number, timeoutMs = 60_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => (sub.unsubscribe(), reject(new Error(`${node} did not say it holds trust version ${version} within ${timeoutMs} ms`))), timeoutMs);
    const sub = control.subscribe(heartbeatSubject(node), {
      callback: (_e, m) => {
        if ((JSON.parse(m.string()) as { trustVersion?: number }).trustVersion !== version) return;
        clearTimeout(timer);
        sub.unsubscribe();
        resolve();
      },
    });
  });
}
