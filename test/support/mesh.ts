import { afterAll, afterEach, beforeAll } from 'vitest';
import { enrolledHost, type HostFixture } from './daemon.js';
import { NatsServer } from './nats.js';

type ServerOptions = Parameters<typeof NatsServer.start>[0];
type HostOptions = Parameters<typeof enrolledHost>[1];

export interface Mesh {
  /** The block's nats-server (started in its beforeAll). */
  readonly server: NatsServer;
  /** An enrolled host on the block's server, its daemon started (unless `start: false`); ended after the test that asked for it. */
  enrol(options?: HostOptions & { start?: boolean }): Promise<HostFixture>;
}

export interface MeshWithHost extends Mesh {
  /** The block's own host: started, its genesis report in the stream before the first test; ended after the last. */
  readonly host: HostFixture;
}

function started<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what} is made in the block's beforeAll; read it inside a test or hook`);
  return value;
}

function registerMesh(options: { server?: ServerOptions; host?: HostOptions }, withHost: boolean): MeshWithHost {
  let server: NatsServer | undefined;
  let host: HostFixture | undefined;
  const perTest: HostFixture[] = [];
  const enrol = async ({ start = true, ...hostOptions }: HostOptions & { start?: boolean } = {}) => {
    const h = await enrolledHost([started(server, 'the nats-server').url], hostOptions);
    perTest.push(h);
    if (start) await h.start();
    return h;
  };
  beforeAll(async () => {
    server = await NatsServer.start(options.server);
    if (!withHost) return;
    host = await enrolledHost([server.url], options.host);
    await host.start();
    await host.waitForReports(1);
  });
  afterEach(async () => {
    for (const h of perTest.splice(0)) await h.cleanup();
    // A test that killed the server to see the link recover leaves it to be run again, same port and store.
    if (server && !server.running) await server.run();
  });
  afterAll(async () => {
    await host?.cleanup();
    await server?.stop();
  });
  return {
    get server() {
      return started(server, 'the nats-server');
    },
    get host() {
      return started(host, 'the host');
    },
    enrol,
  };
}

/**
 * A nats-server on loopback for the describe block it is called in, and hosts enrolled on it per test:
 * the setup every test of a real daemon against a real server shares.
 */
export function useMesh(options: { server?: ServerOptions } = {}): Mesh {
  return registerMesh(options, false);
}

/** useMesh with one host for the whole block, for tests that follow one host through several steps. */
export function useMeshHost(options: { server?: ServerOptions; host?: HostOptions } = {}): MeshWithHost {
  return registerMesh(options, true);
}
