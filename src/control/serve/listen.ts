import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { refused, usageError } from '../../core/system/errors.js';

/** Where and how the page is served: plain on loopback, or TLS with a bearer token anywhere else. */
export interface ListenPlan {
  host: string;
  port: number;
  loopback: boolean;
  tls?: { cert: Buffer; key: Buffer };
  /** The bearer token every request must carry; absent on loopback when none was given. */
  token?: string;
}

export const DEFAULT_LISTEN = '127.0.0.1:8080';

/** 127.0.0.0/8, ::1 and localhost: reachable from this machine only. */
export function isLoopback(host: string): boolean {
  if (host === 'localhost' || host === '::1') return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

/** `HOST:PORT` or `[V6]:PORT`, or a usage error naming what is wrong. */
export function parseListen(text: string): { host: string; port: number } {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  const port = Number(m?.[3]);
  if (!m || port > 65535) throw usageError(`--listen ${text}: write HOST:PORT (127.0.0.1:8080, [::1]:8080, 0.0.0.0:8443)`);
  return { host: (m[1] ?? m[2])!, port };
}

function readSecret(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw refused(`${what} ${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/**
 * The plan for `--listen`, `--https-cert`, `--https-key`, `--token-file`: an address other than loopback
 * needs all three (the page is the fleet's inventory: it never goes over the network in clear, nor to
 * whoever asks); on loopback they are optional, and what is given is used. The page's certificate has
 * flags of its own because `--tls-cert` and `--tls-key` are already meshctl's client certificate for the
 * NATS servers: a serve behind mutual TLS needs both pairs at once.
 */
export function listenPlan(given: { listen?: string; httpsCert?: string; httpsKey?: string; tokenFile?: string }): ListenPlan {
  const { host, port } = parseListen(given.listen ?? DEFAULT_LISTEN);
  const loopback = isLoopback(host);
  const missing = [given.httpsCert ? '' : '--https-cert', given.httpsKey ? '' : '--https-key', given.tokenFile ? '' : '--token-file'].filter(Boolean);
  if (!loopback && missing.length > 0) throw usageError(`--listen ${host}:${port} is not loopback: it needs ${missing.join(', ')} (the page is served over HTTPS, to requests bearing the token)`);
  if (Boolean(given.httpsCert) !== Boolean(given.httpsKey)) throw usageError('--https-cert and --https-key go together');
  const token = given.tokenFile ? readSecret(given.tokenFile, 'the token file').toString('utf8').trim() : undefined;
  if (token !== undefined && token.length < 16) throw refused(`the token file ${given.tokenFile} holds ${token.length ? 'a token shorter than 16 characters' : 'no token'}: write a long random one (openssl rand -hex 32)`);
  const tls = given.httpsCert && given.httpsKey ? { cert: readSecret(given.httpsCert, 'the page\'s certificate (--https-cert)'), key: readSecret(given.httpsKey, 'the page\'s key (--https-key)') } : undefined;
  return { host, port, loopback, ...(tls ? { tls } : {}), ...(token !== undefined ? { token } : {}) };
}
