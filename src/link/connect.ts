import { readFileSync, statSync } from 'node:fs';
import type { Authenticator, NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../core/system/log.js';
import { lazy } from '../core/system/interop.js';
import { refused } from '../core/system/errors.js';
import type { LinkAuth } from '../core/config/link-auth.js';
import { credsAuth } from './creds-auth.js';

export interface LinkSettings extends LinkAuth {
  servers: string[];
  /** A name the servers show for this connection. */
  name: string;
  pingIntervalMs?: number;
  /** Where replies come back (a host's own prefix, so its credentials can keep other hosts' replies from it). */
  inboxPrefix?: string;
  /**
   * A daemon waits for the mesh as long as it takes and reconnects for ever; a command (meshctl)
   * tries each server once and says why it could not connect.
   */
  persistent?: boolean;
  /** A command that keeps running (meshctl serve): connects once like a command, then reconnects for ever like a daemon. */
  reconnect?: boolean;
}

/**
 * How often the client pings its server, to find a connection that died without a word (a server's
 * machine gone): after two unanswered pings it reconnects, to another server of the mesh when there is
 * one, within 20-30 s; the client's default, two minutes, notices far too late. Every 3 s noticed it
 * within 6-9 s, but a ping costs a host about 0.1 ms of CPU and its server as much again: ten thousand
 * hosts sent 3,300 a second, a third of their CPU at that scale while they reported. 20-30 s is well
 * inside what the fleet waits before it calls a host silent (three of its 30 s heartbeats).
 */
const PING_INTERVAL_MS = 10_000;

/** How often a daemon whose credentials the servers refused tries each server again (instead of every quarter second). */
const REFUSED_RETRY_MS = 5000;
const RECONNECT_WAIT_MS = 250;

/**
 * Connects as a daemon must: every server of the mesh, unlimited reconnects, a short wait between
 * them, pings every few seconds. A command connects once, within a bound, and a failure names the
 * servers and the reason.
 */
export async function connectLink(settings: LinkSettings, log: Logger): Promise<NatsConnection> {
  const { connect, nkeyAuthenticator, errors } = await lazy(import('@nats-io/transport-node'));
  const authenticator = settings.creds
    ? credsOf(settings.creds)
    : settings.nkeySeed
      ? nkeyAuthenticator(new TextEncoder().encode(readCredential(settings.nkeySeed, 'the nkey seed file').toString('utf8').trim()))
      : undefined;
  for (const [what, path] of [['the TLS CA', settings.tls?.ca], ['the TLS certificate', settings.tls?.cert], ['the TLS key', settings.tls?.key]] as const) {
    if (path) readCredential(path, what);
  }
  const tls = settings.tls
    ? { ...(settings.tls.ca ? { caFile: settings.tls.ca } : {}), ...(settings.tls.cert ? { certFile: settings.tls.cert } : {}), ...(settings.tls.key ? { keyFile: settings.tls.key } : {}) }
    : undefined;
  const persistent = settings.persistent ?? true;
  // When the servers refuse its credentials (revoked, or not yet rotated in), a daemon tries again
  // every few seconds, not four times a second: a removed host left running costs the servers little.
  let refusedAt = 0;
  const reconnectDelayHandler = () => (Date.now() - refusedAt < 2 * REFUSED_RETRY_MS ? REFUSED_RETRY_MS : RECONNECT_WAIT_MS) + Math.floor(Math.random() * 100);
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers: settings.servers,
      name: settings.name,
      maxReconnectAttempts: persistent || settings.reconnect ? -1 : 0,
      reconnectTimeWait: RECONNECT_WAIT_MS,
      reconnectDelayHandler,
      waitOnFirstConnect: persistent,
      timeout: 5000,
      pingInterval: settings.pingIntervalMs ?? PING_INTERVAL_MS,
      maxPingOut: 2,
      // The client otherwise makes two errors with their stacks for every request that succeeds (to
      // say where a timed-out one began): a direct get and an acknowledged publish each, on every
      // delivery, a tenth of a simulated host's CPU at ten thousand hosts. A timeout still says
      // "timeout" and which request's subject; no message of this project reads the stacks.
      noAsyncTraces: true,
      // The client gives up for good after two refusals of its credentials in a row; a daemon keeps
      // trying, reading its credentials file again each time, so a host whose credentials were rotated
      // (the old ones revoked) connects as soon as the new file is in place.
      ...(persistent ? { ignoreAuthErrorAbort: true } : {}),
      ...(authenticator ? { authenticator } : {}),
      ...(settings.inboxPrefix ? { inboxPrefix: settings.inboxPrefix } : {}),
      ...(tls ? { tls } : {}),
    });
  } catch (err) {
    throw refused(`cannot connect to ${settings.servers.join(', ')}: ${(err as Error).message}`);
  }
  if (persistent) {
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type === 'error' && (status.error instanceof errors.AuthorizationError || status.error instanceof errors.UserAuthenticationExpiredError)) refusedAt = Date.now();
        else if (status.type === 'reconnect') refusedAt = 0;
      }
    })();
  }
  // A daemon's connection is news; a command's is not.
  (persistent ? log.info.bind(log) : log.debug.bind(log))({ server: nc.getServer() }, 'link: connected');
  return nc;
}

/**
 * The credentials file's authenticator. Read again whenever the file has changed since (its inode,
 * size or time), at each connect and reconnect: credentials rotated by the operator (`meshctl
 * node-creds --rotate`, the old ones revoked) are taken by a running daemon as it reconnects, without a
 * restart. A file that cannot be read or parsed any more leaves the last good one answering (the server
 * then says whether it still admits it).
 */
function credsOf(path: string): Authenticator {
  let auth = credsAuth(readCredential(path, 'the credentials file').toString('utf8'));
  if (typeof auth === 'string') throw refused(`the credentials file ${path}: ${auth}`);
  let seen = fileStamp(path);
  return (nonce?: string) => {
    const now = fileStamp(path);
    if (now !== undefined && now !== seen) {
      seen = now;
      try {
        const fresh = credsAuth(readFileSync(path, 'utf8'));
        if (typeof fresh !== 'string') auth = fresh;
      } catch {
        // The last good credentials answer.
      }
    }
    return (auth as Exclude<typeof auth, string>)(nonce);
  };
}

function fileStamp(path: string): string | undefined {
  try {
    const st = statSync(path);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return undefined;
  }
}

function readCredential(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw refused(`${what} ${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}
