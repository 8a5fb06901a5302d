import { createServer as createPlain, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createTls } from 'node:https';
import type { NatsConnection } from '@nats-io/transport-node';
import { NODE_ID_PATTERN } from '../../core/declaration/ids.js';
import { refused, type HostError } from '../../core/system/errors.js';
import type { Logger } from '../../core/system/log.js';
import { ASSETS, type Asset } from './assets.generated.js';
import type { FleetFeed } from './feed.js';
import { bornToken, loopbackHost, sameToken, TOKEN_COOKIE } from './guard.js';
import type { ListenPlan } from './listen.js';
import { askInventory, askStatus, nodeView } from './node.js';
import { rolloutList, rolloutView } from './rollouts.js';
import { EventStream } from './sse.js';

export interface PageDeps {
  nc: NatsConnection;
  feed: FleetFeed;
  plan: ListenPlan;
  log: Logger;
  now: () => number;
}

/**
 * Everything the page's script, style and chart need, and nothing else: no inline script or style,
 * no other origin, not framed. The chart's SVG is drawn with presentation attributes, which CSP allows.
 */
export const CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

function securityHeaders(res: ServerResponse, tls: boolean): void {
  res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
  if (tls) res.setHeader('Strict-Transport-Security', 'max-age=31536000');
}

function sendAsset(req: IncomingMessage, res: ServerResponse, asset: Asset, status = 200): void {
  if (status === 200 && req.headers['if-none-match'] === asset.etag) {
    res.writeHead(304, { ETag: asset.etag }).end();
    return;
  }
  res.writeHead(status, { 'Content-Type': asset.type, ETag: asset.etag, 'Cache-Control': 'no-cache' });
  res.end(req.method === 'HEAD' ? undefined : asset.body);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' }).end(JSON.stringify(value));
}

function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', ...headers }).end(`${text}\n`);
}

const NODE_ID = new RegExp(NODE_ID_PATTERN);
/** A rollout's id as meshctl rollout makes them (`r-20261203-091502-3fa2`), or any key of that shape. */
const ROLLOUT_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;

/** The routes of the page: all reads; the one POST is the login form, which only sets the browser's cookie. */
export function pageHandler(deps: PageDeps): RequestListener {
  const { plan } = deps;
  return (req, res) => {
    securityHeaders(res, plan.tls !== undefined);
    const url = new URL(req.url ?? '/', 'http://page');
    if (!plan.token && !loopbackHost(req)) return sendText(res, 421, 'this page answers requests addressed to loopback (127.0.0.1, localhost, [::1]) only');
    if (url.pathname === '/login') return login(req, res, plan);
    if (url.pathname === '/assets/page.css' && req.method === 'GET') return sendAsset(req, res, ASSETS['/assets/page.css']);
    if (plan.token) {
      const given = bornToken(req);
      if (given === undefined || !sameToken(given, plan.token)) {
        res.setHeader('WWW-Authenticate', 'Bearer realm="mesh"');
        return (req.headers.accept ?? '').includes('text/html') ? sendAsset(req, res, ASSETS.login, 401) : sendText(res, 401, 'a bearer token is needed (Authorization: Bearer TOKEN)');
      }
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return sendText(res, 405, 'the page only reads', { Allow: 'GET, HEAD' });
    route(req, res, url, deps).catch((err: unknown) => {
      deps.log.warn({ err, url: url.pathname }, 'serve: a request failed');
      if (!res.headersSent) sendJson(res, 502, { error: (err as Error).message });
      else res.destroy();
    });
  };
}

async function route(req: IncomingMessage, res: ServerResponse, url: URL, deps: PageDeps): Promise<void> {
  const path = url.pathname;
  if (path === '/' || path === '/rollouts' || /^\/(node|rollout)\/[^/]+$/.test(path)) return sendAsset(req, res, ASSETS.shell);
  if (path === '/assets/page.js' || path === '/assets/lifecycle.svg') return sendAsset(req, res, ASSETS[path]);
  if (path === '/events') return events(res, url, deps);
  if (path === '/api/rollouts') return sendJson(res, 200, await rolloutList(deps.nc));
  const rollout = /^\/api\/rollout\/([^/]+)$/.exec(path);
  if (rollout) return sendRollout(res, decodeURIComponent(rollout[1]!), deps);
  const api = /^\/api\/node\/([^/]+)(?:\/(status|inventory))?$/.exec(path);
  if (!api) return sendText(res, 404, `nothing at ${path}`);
  const node = decodeURIComponent(api[1]!);
  if (!NODE_ID.test(node)) return sendJson(res, 400, { error: `'${node}' is not a node id` });
  if (api[2] === 'status') return sendJson(res, 200, await askStatus(deps.nc, node));
  if (api[2] === 'inventory') return sendJson(res, 200, await askInventory(deps.nc, node));
  return sendJson(res, 200, await nodeView(deps.nc, node, deps.feed.row(node), deps.feed.currentEnrolments(), deps.now()));
}

async function sendRollout(res: ServerResponse, id: string, deps: PageDeps): Promise<void> {
  if (!ROLLOUT_ID.test(id)) return sendJson(res, 400, { error: `'${id}' is not a rollout id` });
  const view = await rolloutView(deps.nc, id, deps.now());
  return view ? sendJson(res, 200, view) : sendJson(res, 404, { error: `the mesh keeps no rollout ${id}` });
}

/** `/events`: the fleet's rows (a snapshot, then what changes); with `?node=N`, that node's new reports too. */
function events(res: ServerResponse, url: URL, deps: PageDeps): void {
  const node = url.searchParams.get('node');
  const unsubscribe: Array<() => void> = [];
  const stream = new EventStream(res, () => unsubscribe.forEach((u) => u()));
  stream.send('snapshot', deps.feed.snapshot());
  unsubscribe.push(deps.feed.onRows((message) => stream.send('rows', message)));
  if (node && NODE_ID.test(node)) unsubscribe.push(deps.feed.onReport(node, (report) => stream.send('report', report)));
}

/** The login form posts the token; a right one becomes an HttpOnly cookie for this origin, a wrong one the form again. */
function login(req: IncomingMessage, res: ServerResponse, plan: ListenPlan): void {
  if (req.method !== 'POST') return sendAsset(req, res, ASSETS.login, plan.token ? 200 : 404);
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => {
    body += chunk;
    if (body.length > 4096) req.destroy();
  });
  req.on('end', () => {
    const token = new URLSearchParams(body).get('token') ?? '';
    if (!plan.token || !sameToken(token, plan.token)) return sendAsset(req, res, ASSETS.login, 401);
    const cookie = `${TOKEN_COOKIE}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/${plan.tls ? '; Secure' : ''}`;
    res.writeHead(303, { Location: '/', 'Set-Cookie': cookie, 'Cache-Control': 'no-store' }).end();
  });
}

/** Why the address cannot be listened on, in one line the operator acts on; undefined for what is not the address's fault. */
function listenRefusal(err: NodeJS.ErrnoException, plan: ListenPlan): HostError | undefined {
  const at = `${plan.host.includes(':') ? `[${plan.host}]` : plan.host}:${plan.port}`;
  const why: Record<string, string> = {
    EADDRINUSE: `${at} is in use: another program listens there (--listen HOST:PORT picks another)`,
    EACCES: `${at} may not be listened on by this user (a port below 1024 needs root)`,
    EADDRNOTAVAIL: `${at} is not an address of this machine (--listen HOST:PORT)`,
  };
  const message = err.code === undefined ? undefined : why[err.code];
  return message === undefined ? undefined : refused(message, [], 'state');
}

/** The server, plain or TLS as planned, listening; resolves once it listens. An address it cannot take is refused (exit 3) in one line. */
export async function listenPage(deps: PageDeps): Promise<Server> {
  const handler = pageHandler(deps);
  const server: Server = deps.plan.tls ? createTls({ cert: deps.plan.tls.cert, key: deps.plan.tls.key }, handler) : createPlain(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(listenRefusal(err, deps.plan) ?? err));
    server.listen(deps.plan.port, deps.plan.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
