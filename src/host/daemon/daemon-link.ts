import type { NatsConnection } from '@nats-io/transport-node';
import type { HostConfig } from '../../core/config/config.js';
import { linkAuthOf } from '../../core/config/link-auth.js';
import type { ReportSigner } from '../../link/report-trust.js';
import { LinkSession, type LinkHandlers } from '../../link/session.js';
import type { Clock } from '../../core/system/clock.js';
import type { Logger } from '../../core/system/log.js';

/** How often a host with no servers says that it waits. */
export const NO_SERVERS_SAID_EVERY_MS = 60_000;

/**
 * The link as the daemon holds it: opened on the servers the configuration names, closed when the
 * lifecycle leaves serving. Reports are published through whichever session is open.
 */
export class DaemonLink {
  private session: LinkSession | undefined;

  constructor(private readonly log: Logger, private readonly clock: Clock, private readonly signer: () => ReportSigner) {}

  /** Opens a session; the function returned closes it. */
  open(config: HostConfig, handlers: LinkHandlers): () => void {
    if (config.servers.length === 0) return this.waitForServers();
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

  /**
   * No servers to link to: the host is not enrolled in a mesh (or its configuration lost them). It serves
   * what it keeps and waits, saying so at once and then once a minute, with what would end the wait.
   */
  private waitForServers(): () => void {
    const say = () =>
      this.log.warn(
        'link: no servers in the configuration ("servers" is empty): this host is not linked to a mesh and waits, saying so once a minute. ' +
          "Enrol it with 'mesh-host genesis BUNDLE --mode adopted|converged' (or 'mesh-host run --bundle BUNDLE --mode …'), or set \"servers\" in the configuration and send SIGHUP",
      );
    let cancel = () => {};
    const again = () => {
      say();
      cancel = this.clock.after(NO_SERVERS_SAID_EVERY_MS, again);
    };
    again();
    return () => cancel();
  }

  /** The largest message the connected server takes, what a report is fitted under; throws when the link is down. */
  limit(): number {
    return this.connected().maxPayload ?? Infinity;
  }

  /** Publishes one report's bytes and waits for the stream's acknowledgement. */
  async publish(sequence: number, bytes: Buffer): Promise<{ duplicate: boolean }> {
    const session = this.connected();
    const { duplicate } = await session.publishReport(sequence, bytes);
    // A beat right after each report: the fleet reads what the host applied from the beat, which then
    // knows of this report (a refusal's report carries no applied declaration of its own).
    session.beatNow();
    return { duplicate };
  }

  private connected(): LinkSession {
    const session = this.session;
    if (!session?.connected) throw new Error('the link is not connected');
    return session;
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
