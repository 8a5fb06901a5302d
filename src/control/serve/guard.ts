import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isLoopback } from './listen.js';

/** The cookie a browser gets once it has shown the token on the login form (a browser cannot send a header on an EventSource). */
export const TOKEN_COOKIE = 'mesh_page_token';

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Whether `given` is the token, compared in constant time. */
export function sameToken(given: string, token: string): boolean {
  return timingSafeEqual(digest(given), digest(token));
}

/** The token a request bears: `Authorization: Bearer T`, or the login cookie. */
export function bornToken(req: IncomingMessage): string | undefined {
  const auth = req.headers.authorization;
  if (auth?.startsWith('Bearer ')) return auth.slice('Bearer '.length).trim();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === TOKEN_COOKIE) return decodeURIComponent(value.join('='));
  }
  return undefined;
}

/**
 * A page served without a token answers only requests addressed to loopback by name: a web site whose
 * name was made to resolve to 127.0.0.1 (DNS rebinding) would otherwise read the fleet from a browser here.
 */
export function loopbackHost(req: IncomingMessage): boolean {
  const host = req.headers.host ?? '';
  const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d+$/, '');
  return isLoopback(name);
}
