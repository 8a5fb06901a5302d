import type { NatsConnection } from '@nats-io/transport-node';
import type { HostConfig } from '../config/config.js';
import { linkAuthOf } from '../config/link-auth.js';
import type { ReportSigner } from '../link/report-trust.js';
import { LinkSession, type LinkHandlers } from '../link/session.js';
import type { Clock } from '../system/clock.js';
import type { Logger } from '../system/log.js';

/**
 * The link as the daemon holds it: opened on the servers the configuration names, closed when the
 * lifecycle leaves serving. Reports are published through whichever session is open.
 */
export class DaemonLink {
  private session: LinkSession | undefined;

  constructor(private readonly log: Logger, private readonly clock: Clock, private readonly signer: () => ReportSigner) {}

  /** Opens a session; the function returned closes it. */
  open(config: HostConfig, handlers: LinkHandlers): () => void {
    if (config.servers.length === 0) {
      this.log.warn('link: no servers in the configuration; the host serves without a link');
      return () => {};
    }
    const session = new LinkSession(
      {
        settings: { servers: config.servers, name: `mesh-host ${config.node}`, ...linkAuthOf(config) },
        node: config.node,
        log: this.log,
        clock: this.clock,
        signer: this.signer(),
        ...(config.heartbeatMs ? { heartbeatMs: config.heartbeatMs } : {}),
        ...(config.rereadMs ? { rereadMs: config.rereadMs } : {}),
      },
      handlers,
    );
    this.session = session;
    session.open().catch((err: Error) => this.log.error({ err }, 'link: could not open'));
    return () => {
      if (this.session === session) this.session = undefined;
      void session.close();
    };
  }

  /** Publishes one report, made by `fit` for the server's limit, and waits for the stream's acknowledgement; nothing to send when fit has nothing. */
  async publish(sequence: number, fit: (limit: number) => Buffer | undefined): Promise<{ sent: false } | { sent: true; duplicate: boolean; bytes: number }> {
    const session = this.session;
    if (!session?.connected) throw new Error('the link is not connected');
    const bytes = fit(session.maxPayload ?? Infinity);
    if (!bytes) return { sent: false };
    const { duplicate } = await session.publishReport(sequence, bytes);
    return { sent: true, duplicate, bytes: bytes.length };
  }

  /** A heartbeat now, besides the timer's (the pause changed): nothing when the link is down. */
  beatNow(): void {
    this.session?.beatNow();
  }

  /** The live connection, for what reads over the link besides declarations (archives). */
  get connection(): NatsConnection | undefined {
    return this.session?.connection;
  }
}
