/**
 * What it costs the servers that every host hears its own key, in the two shapes a host can do it:
 * a KV watch (one ordered push consumer per host, as hosts did before) or a plain subscription to the
 * key's subject with a direct get (what hosts do now). Many hosts' worth in one process over a few
 * connections, so that what is measured is the per-host cost on the servers, not 10,000 connections.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV } from '@nats-io/kv';
import { jetstreamManager } from '@nats-io/jetstream';
import { ensureWire } from '../src/link/control.js';
import { DECLARATIONS_BUCKET, declarationSubject } from '../src/link/wire.js';
import { NatsServer, startCluster } from '../test/support/nats.js';
import { serverPids, waitFor } from './scale-support.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectDir } from '../test/support/cli.js';
import { cpuTicks, fmt, HZ, median, rssMb } from './stats.js';

export type Shape = 'consumer' | 'subscription';

export interface ShapeFigures {
  shape: Shape;
  hosts: number;
  servers: number;
  /** Wall time until every host's watch (or subscription and first read) was in place. */
  setUpS: number;
  /** Hosts whose set-up failed (a consumer creation that timed out): a host would have to try again. */
  setUpFailures: number;
  /** Server CPU during the set-up, summed over the servers. */
  setUpCpuS: number;
  /** Server RSS after the set-up, less before it, summed. */
  addedRssMb: number;
  /** Server CPU over the idle interval (nothing put), per minute. */
  idleCpuSPerMin: number;
  consumers: number;
  /** From a put to the host having the new value, median over the sampled keys. */
  noticeMs: number;
  failed?: string;
}

const CONNECTIONS = 20;
const IN_FLIGHT = 100;
const IDLE_MS = 20_000;
const SAMPLED_PUTS = 50;
const SET_UP_BOUND_MS = 5 * 60_000;

async function inBatches<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += IN_FLIGHT) await Promise.all(items.slice(i, i + IN_FLIGHT).map(fn));
}

/** Opens one host's hearing of its key in the given shape; calls `heard` with each revision it gets. */
async function hear(shape: Shape, nc: NatsConnection, kv: KV, node: string, known: () => number, heard: (revision: number) => void): Promise<void> {
  if (shape === 'consumer') {
    const iterator = await kv.watch({ key: node, ignoreDeletes: true });
    void (async () => {
      for await (const e of iterator) heard(e.revision);
    })().catch(() => {});
    return;
  }
  nc.subscribe(declarationSubject(node), {
    callback: () => {
      // As the link session does: read back the value with its revision, again (backing off) until newer.
      void (async () => {
        const before = known();
        for (let attempt = 0; attempt < 8 && !nc.isClosed(); attempt++) {
          const e = await kv.get(node);
          if (e) heard(e.revision);
          if (known() > before) return;
          await new Promise((r) => setTimeout(r, 25 * 2 ** attempt));
        }
      })().catch(() => {});
    },
  });
  const e = await kv.get(node);
  if (e) heard(e.revision);
}

export async function runShape(shape: Shape, hosts: number, cluster: boolean): Promise<ShapeFigures> {
  const servers = cluster ? await startCluster() : [await NatsServer.start()];
  const urls = servers.map((s) => s.url);
  const conns: NatsConnection[] = [];
  try {
    const control = await connect({ servers: urls });
    conns.push(control);
    await waitFor(() => ensureWire(control));
    const nodes = Array.from({ length: hosts }, (_, i) => `sim-${String(i).padStart(5, '0')}`);
    const put = await new Kvm(control).open(DECLARATIONS_BUCKET);
    await inBatches(nodes, async (node) => void (await put.put(node, 'first')));
    for (let i = 0; i < CONNECTIONS; i++) conns.push(await connect({ servers: urls }));
    const kvs = await Promise.all(conns.slice(1).map((nc) => new Kvm(nc).open(DECLARATIONS_BUCKET, { allow_direct: true })));
    const pids = serverPids(servers.map((s) => s.port));
    const cpu = () => pids.reduce((a, p) => a + cpuTicks(p), 0);
    const rss = () => pids.reduce((a, p) => a + rssMb(p), 0);
    const latest = new Map<string, number>();
    const rss0 = rss();
    const cpu0 = cpu();
    const t0 = performance.now();
    let setUpFailures = 0;
    let setUp = 0;
    const all = inBatches(nodes.map((node, i) => [node, i] as const), async ([node, i]) => {
      const at = i % CONNECTIONS;
      // A set-up that fails (the JetStream API's 5 s timeout) is counted, as a host would have to retry it.
      await hear(shape, conns[at + 1]!, kvs[at]!, node, () => latest.get(node) ?? 0, (revision) => latest.set(node, Math.max(latest.get(node) ?? 0, revision))).catch(() => void setUpFailures++);
      setUp++;
    });
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([all, new Promise((_, reject) => (bound = setTimeout(() => reject(new Error(`${setUp.toLocaleString('en')} of ${hosts.toLocaleString('en')} set up after ${SET_UP_BOUND_MS / 60_000} minutes`)), SET_UP_BOUND_MS)))]).finally(() => clearTimeout(bound));
    const setUpS = (performance.now() - t0) / 1000;
    const setUpCpuS = (cpu() - cpu0) / HZ;
    const cpu1 = cpu();
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const idleCpuSPerMin = ((cpu() - cpu1) / HZ) * (60_000 / IDLE_MS);
    const addedRssMb = rss() - rss0;
    const consumers = (await (await jetstreamManager(control)).streams.info(`KV_${DECLARATIONS_BUCKET}`)).state.consumer_count;
    const notices: number[] = [];
    const listening = nodes.filter((node) => latest.has(node));
    for (let i = 0; i < SAMPLED_PUTS; i++) {
      const node = listening[Math.floor((i * listening.length) / SAMPLED_PUTS)]!;
      const t = performance.now();
      const revision = await put.put(node, `second ${i}`);
      while ((latest.get(node) ?? 0) < revision) {
        if (performance.now() - t > 30_000) throw new Error(`${node} did not hear revision ${revision} within 30 s`);
        await new Promise((r) => setTimeout(r, 1));
      }
      notices.push(performance.now() - t);
    }
    const died = servers.find((s) => !s.running);
    if (died) throw new Error(`the server on ${died.port} died: ${died.log.slice(-400)}`);
    return { shape, hosts, servers: servers.length, setUpS, setUpFailures, setUpCpuS, addedRssMb, idleCpuSPerMin, consumers, noticeMs: median(notices) };
  } finally {
    for (const nc of conns) await nc.close().catch(() => {});
    for (const s of servers) await s.stop();
  }
}

const shapeHeader = [
  '| shape | hosts | servers | set up | failed set-ups | server CPU to set up | server RSS added | server CPU idle, per minute | consumers on the bucket | put to heard, median |',
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
];

const shapeName = (shape: Shape) => (shape === 'consumer' ? 'KV watch (a consumer a host)' : 'subscription + direct get');

const shapeRow = (f: ShapeFigures) =>
  f.failed
    ? `| ${shapeName(f.shape)} | ${f.hosts.toLocaleString('en')} | ${f.servers} | did not finish: ${f.failed} | | | | | | |`
    : `| ${shapeName(f.shape)} | ${f.hosts.toLocaleString('en')} | ${f.servers} | ${fmt(f.setUpS)} s | ${f.setUpFailures.toLocaleString('en')} | ${fmt(f.setUpCpuS)} s | ${f.addedRssMb.toFixed(0)} MB | ${fmt(f.idleCpuSPerMin)} s | ${f.consumers.toLocaleString('en')} | ${fmt(f.noticeMs)} ms |`;

const SHAPE_HEADING = '### How a host hears its key, at ten thousand hosts';

/**
 * The shapes' subsection as the page has it: a run that leaves them out (SCALE_SHAPE_SIZES empty; they
 * take a quarter of an hour) keeps what the last run that measured them wrote.
 */
export function keptShapeSection(): string[] {
  let page: string;
  try {
    // A whole run rewrites the page after each part: the page as it began is where the subsections are.
    page = readFileSync(process.env.MESH_HOST_BENCH_PAGE ?? join(projectDir, 'docs/bench.md'), 'utf8');
  } catch {
    return [];
  }
  const start = page.indexOf(SHAPE_HEADING);
  if (start < 0) return [];
  const end = page.indexOf('\n## ', start);
  return page.slice(start, end < 0 ? undefined : end).trimEnd().split('\n');
}

export function shapeSection(shapes: ShapeFigures[]): string[] {
  return [
    SHAPE_HEADING,
    '',
    'The two shapes side by side, many hosts\' worth in one process over 20 connections (so that what is measured is the',
    "servers' cost per host, not 10,000 connections): a KV watch (one ordered push consumer a host, with flow control and",
    "a heartbeat every 5 s: what hosts did before) against a subscription to the key's subject and a direct get of the",
    'key (what hosts do now). Set-up at 100 in flight; idle for 20 s; then 50 puts one after another, each timed until',
    'its host has read the new revision.',
    '',
    ...shapeHeader,
    ...shapes.map(shapeRow),
    '',
    ...shapeAnalysis(shapes),
  ];
}

/** What the two shapes cost, from this run's rows. */
function shapeAnalysis(shapes: ShapeFigures[]): string[] {
  const lines: string[] = [];
  for (const servers of [1, 3]) {
    const sub = shapes.find((f) => f.servers === servers && f.shape === 'subscription' && !f.failed);
    const con = shapes.find((f) => f.servers === servers && f.shape === 'consumer');
    if (!sub || !con) continue;
    const where = servers === 1 ? 'one server' : 'the three-server cluster';
    if (con.failed) {
      lines.push(`- On ${where}, ${con.hosts.toLocaleString('en')} KV watches did not finish: ${con.failed}; the subscriptions were all in place in ${fmt(sub.setUpS)} s.`);
      continue;
    }
    lines.push(
      `- On ${where}, ${con.hosts.toLocaleString('en')} hosts: a consumer a host costs the servers ${((con.addedRssMb * 1024) / con.hosts).toFixed(1)} KB a host against ${((Math.max(0, sub.addedRssMb) * 1024) / sub.hosts).toFixed(1)} KB, ${fmt(con.setUpCpuS)} s of server CPU to set up against ${fmt(sub.setUpCpuS)} s (${fmt(con.setUpS)} s against ${fmt(sub.setUpS)} s of wall), and ${fmt(con.idleCpuSPerMin)} s of server CPU a minute while nothing happens (a heartbeat every 5 s from every consumer) against ${fmt(sub.idleCpuSPerMin)} s${con.setUpFailures ? `; ${con.setUpFailures.toLocaleString('en')} consumer creations timed out` : ''}. A put is heard in ${fmt(sub.noticeMs)} ms against ${fmt(con.noticeMs)} ms: the read back is one more round trip.`,
    );
  }
  lines.push(
    '- So one consumer a host is not the shape for ten thousand hosts, and hosts no longer make one. What a host gives up: a watch would resend a put it missed while connected; a subscription does not, which is why the host reads its key on every reconnect and every minute (a notice missed on a live connection, a route lost in a cluster, waits at most that minute).',
  );
  return lines;
}
