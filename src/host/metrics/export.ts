import { createServer, type Server } from 'node:http';
import { isIP } from 'node:net';
import { dirname } from 'node:path';
import { mkdirSync } from 'node:fs';
import { writeDurably } from '../../core/system/durable.js';
import type { HostMetrics } from './metrics.js';

/**
 * The metrics for node_exporter's textfile collector: rendered and swapped in whole (a temporary file
 * renamed over it), so the collector never reads half a file. World-readable: the collector runs as
 * another user, and nothing in it is secret.
 */
export async function writeMetricsFile(path: string, metrics: HostMetrics): Promise<void> {
  const text = await metrics.render();
  mkdirSync(dirname(path), { recursive: true });
  writeDurably(path, Buffer.from(text), 0o644);
}

/** `HOST:PORT` (or `[V6]:PORT`) of a loopback address, or why it is refused: the endpoint is never open to the network. */
export function parseLoopbackListen(value: string): { host: string; port: number } | { problem: string } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  if (!m) return { problem: `metricsListen '${value}' is not HOST:PORT` };
  const host = (m[1] ?? m[2])!;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return { problem: `metricsListen '${value}': the port must be 1-65535` };
  const loopback = host === 'localhost' || (isIP(host) === 4 && host.startsWith('127.')) || host === '::1';
  if (!loopback) return { problem: `metricsListen '${value}' is not a loopback address (127.0.0.0/8, ::1 or localhost): the endpoint is only served on loopback` };
  return { host, port };
}

/** Serves `GET /metrics` on a loopback address until closed; anything else is 404. */
export async function serveMetrics(listen: { host: string; port: number }, metrics: HostMetrics): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url !== '/metrics' && req.url !== '/')) {
      res.writeHead(404).end('not found: GET /metrics\n');
      return;
    }
    metrics.render().then(
      (text) => res.writeHead(200, { 'Content-Type': metrics.contentType }).end(text),
      (err: Error) => res.writeHead(500).end(`${err.message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  return server;
}
