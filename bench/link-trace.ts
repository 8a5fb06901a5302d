import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DeliveryStep } from '../src/core/system/trace.js';
import type { FullCollection, TracedDelivery } from './delivery-trace.js';
import { linkedHost, type Delivered } from './link-host.js';
import { fmt, median, percentile } from './stats.js';
import { scratch } from '../test/support/tree.js';

type Instant = DeliveryStep | 'put' | 'heard';

/** Each stretch of a delivery, from one mark to the next, and what happens in it. */
const STRETCHES: Array<[Instant, Instant, string]> = [
  ['put', 'notice', 'the put stored by the server and its notice to the daemon (both processes\' clocks)'],
  ['notice', 'read', 'to the read of the key (and any read that found no newer value yet, with its back-off)'],
  ['read', 'got', 'the direct get of the key, a round trip to the server'],
  ['got', 'verified', "the intake: the envelope's signature checked, the declaration parsed and validated"],
  ['verified', 'kept', 'the lifecycle takes the delivery and begins to write `declared.json` (off the event loop)'],
  ['kept', 'worker', 'the worker started, the event loop let go once'],
  ['worker', 'locked', 'the lock taken, the store of the last run checked and used again'],
  ['locked', 'source', 'the pause checked under the lock, then the declaration the intake checked taken as it is (a reconcile reads the kept one again)'],
  ['source', 'planned', 'the gate and the plan: 101 resources looked at (lstat, read, compare)'],
  ['planned', 'applied', 'the apply (nothing to change: it does not wait for `declared.json`, which only a change would)'],
  ['applied', 'reported', "the report made (the links' facts)"],
  ['reported', 'outboxed', "the report written to the outbox durably (its whole copy for the host's own reading goes beside, unwaited), the store's head written and fsynced beside it, the entry renamed once `declared.json` is durable too"],
  ['outboxed', 'committed', "the head's rename (the commit), once the entry is durable"],
  ['committed', 'sending', 'the lifecycle told the report may leave; it starts the sender'],
  ['sending', 'signed', 'the outbox entry read back, fitted and signed'],
  ['signed', 'heard', 'the JetStream publish until the control side hears the report (both clocks)'],
];

/** Beside the sender (the worker's end), and after the report is heard, overlapping the next delivery. */
const AFTER: Array<[Instant, Instant, string]> = [
  ['committed', 'saved', "the head's directory fsync, which makes the rename durable (beside the sender)"],
  ['saved', 'unlocked', 'the lock let go'],
  ['unlocked', 'done', "the metrics' file written"],
  ['heard', 'acknowledged', "the stream's acknowledgement back at the daemon (both clocks)"],
  ['acknowledged', 'removed', "the report removed from the outbox once the save that counts it ended (its durability rides on the next report's directory fsync)"],
];

/**
 * Where a delivery's time goes: a second daemon, the same flags, with the trace listener loaded
 * (bench/delivery-trace.ts); the median and p99 of each stretch between two marks over `count` deliveries.
 */
export async function traceDeliveries(url: string, nodeFlags: string[], count: number): Promise<string[]> {
  const s = scratch('mesh-host-trace-');
  const file = join(s.dir, 'trace.jsonl');
  const gcFile = join(s.dir, 'gc.jsonl');
  process.env.MESH_HOST_TRACE_FILE = file;
  process.env.MESH_HOST_GC_FILE = gcFile;
  const listener = pathToFileURL(join(import.meta.dirname, 'delivery-trace.js')).href;
  const linked = await linkedHost(url, [...nodeFlags, '--import', listener]).finally(() => {
    delete process.env.MESH_HOST_TRACE_FILE;
    delete process.env.MESH_HOST_GC_FILE;
  });
  const seen: Delivered[] = [];
  try {
    for (let i = 0; i < 20; i++) await linked.deliver(); // warm
    for (let i = 0; i < count; i++) seen.push(await linked.deliver());
    // The last report's removal follows its publish.
    await new Promise((r) => setTimeout(r, 500));
  } finally {
    await linked.close();
  }
  const traced = readLines<TracedDelivery>(file).slice(-count);
  // No full collection while traced leaves no file.
  const collections = existsSync(gcFile) ? readLines<FullCollection>(gcFile) : [];
  s.cleanup();
  const at = (i: number, instant: Instant) => (instant === 'put' ? seen[i]!.putAt : instant === 'heard' ? seen[i]!.heardAt : traced[i]!.at[instant]);
  const row = ([from, to, what]: [Instant, Instant, string]) => {
    const spans = traced.flatMap((_, i) => {
      const a = at(i, from);
      const b = at(i, to);
      return a === undefined || b === undefined ? [] : [b - a];
    });
    return `| ${from} → ${to} | ${what} | ${fmt(median(spans))} | ${fmt(percentile(spans, 99))} | ${fmt(spans.reduce((x, y) => x + y, 0) / spans.length)} |`;
  };
  const totals = seen.map((d) => d.ms);
  const reread = traced.filter((d) => d.reads > 1).length;
  return [
    '| stretch | what happens | median ms | p99 ms | mean ms |',
    '| --- | --- | ---: | ---: | ---: |',
    ...STRETCHES.map(row),
    `| put → heard | the whole, as the control side timed it | ${fmt(median(totals))} | ${fmt(percentile(totals, 99))} | ${fmt(totals.reduce((x, y) => x + y, 0) / totals.length)} |`,
    ...AFTER.map(row),
    '',
    `${traced.length} deliveries traced; ${reread} of them read the key more than once (the notice came before the stream had stored the put).`,
    ...collectionsIn(seen, collections),
  ];
}

/** A file of one JSON value a line. */
function readLines<T>(path: string): T[] {
  return readFileSync(path, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as T);
}

/** The deliveries a full collection of the daemon's heap paused (its pause began between the put and the report heard), against the others. */
export function collectionsIn(seen: Delivered[], collections: FullCollection[]): string[] {
  const paused = (d: Delivered) => collections.filter((c) => c.at >= d.putAt && c.at <= d.heardAt);
  const hit = seen.filter((d) => paused(d).length > 0).map((d) => d.ms);
  const clear = seen.filter((d) => paused(d).length === 0).map((d) => d.ms);
  const pauses = seen.flatMap((d) => paused(d).map((c) => c.ms));
  if (hit.length === 0) return [`No full collection of the daemon's heap fell inside a delivery (${collections.length} in the whole run).`];
  const figures = (ms: number[]) => (ms.length === 0 ? 'none' : `median ${fmt(median(ms))} ms, p99 ${fmt(percentile(ms, 99))} ms`);
  return [
    `${hit.length} of the ${seen.length} deliveries had a full collection of the daemon's heap inside them (its pause: median ${fmt(median(pauses))} ms, longest`,
    `${fmt(Math.max(...pauses))} ms): those took ${figures(hit)}; the other ${clear.length}: ${figures(clear)}.`,
  ];
}
