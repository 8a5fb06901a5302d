import { readFileSync } from 'node:fs';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../system/log.js';
import { lazy } from '../system/interop.js';

export interface LinkSettings {
  servers: string[];
  /** A NATS credentials file (JWT and nkey seed). */
  creds?: string;
  /** A file holding a user nkey seed. */
  nkeySeed?: string;
  tls?: { ca?: string; cert?: string; key?: string };
  /** A name the servers show for this connection. */
  name: string;
  pingIntervalMs?: number;
}

/**
 * Connects as a daemon must: every server of the mesh, unlimited reconnects, a short wait between
 * them, pings every few seconds (the default, two minutes, notices a dead server far too late).
 */
export async function connectLink(settings: LinkSettings, log: Logger): Promise<NatsConnection> {
  const { connect, credsAuthenticator, nkeyAuthenticator } = await lazy(import('@nats-io/transport-node'));
  const authenticator = settings.creds
    ? credsAuthenticator(readFileSync(settings.creds))
    : settings.nkeySeed
      ? nkeyAuthenticator(new TextEncoder().encode(readFileSync(settings.nkeySeed, 'utf8').trim()))
      : undefined;
  const tls = settings.tls
    ? { ...(settings.tls.ca ? { caFile: settings.tls.ca } : {}), ...(settings.tls.cert ? { certFile: settings.tls.cert } : {}), ...(settings.tls.key ? { keyFile: settings.tls.key } : {}) }
    : undefined;
  const nc = await connect({
    servers: settings.servers,
    name: settings.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: true,
    pingInterval: settings.pingIntervalMs ?? 3000,
    maxPingOut: 2,
    ...(authenticator ? { authenticator } : {}),
    ...(tls ? { tls } : {}),
  });
  log.info({ server: nc.getServer() }, 'link: connected');
  return nc;
}
