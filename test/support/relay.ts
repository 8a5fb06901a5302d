import { createServer, connect, type Server, type Socket } from 'node:net';
import { freePort } from './nats.js';

/**
 * A TCP relay on loopback that can be cut and mended: a site's uplink, between a leaf node and the hub.
 * Cut, it drops every connection through it and refuses new ones (as a site whose line went down);
 * mended, it takes connections again on the same port.
 */
export class Relay {
  private server?: Server;
  private readonly sockets = new Set<Socket>();

  private constructor(readonly port: number, private readonly target: number) {}

  static async start(target: number): Promise<Relay> {
    const relay = new Relay(await freePort(), target);
    await relay.mend();
    return relay;
  }

  get url(): string {
    return `nats-leaf://127.0.0.1:${this.port}`;
  }

  /** Takes connections again. */
  mend(): Promise<void> {
    const server = createServer((inbound) => {
      const outbound = connect(this.target, '127.0.0.1');
      for (const [a, b] of [[inbound, outbound], [outbound, inbound]] as const) {
        this.sockets.add(a);
        a.pipe(b);
        a.on('error', () => b.destroy());
        a.on('close', () => {
          this.sockets.delete(a);
          b.destroy();
        });
      }
    });
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
  }

  /** Drops every connection and refuses new ones. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    for (const s of this.sockets) s.destroy();
    await closed;
  }

  get connections(): number {
    return this.sockets.size;
  }
}
