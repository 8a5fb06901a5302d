/**
 * Loaded into a daemon by the link benchmark (`node --import` this file): it listens to the daemon's
 * delivery marks (src/core/system/trace.ts) and appends each delivery's, once its report left the outbox,
 * as one JSON line to the file named by MESH_HOST_TRACE_FILE. Nothing of the host loads it.
 */
import { appendFileSync } from 'node:fs';
import { subscribe } from 'node:diagnostics_channel';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import type { DeliveryMark, DeliveryStep } from '../src/core/system/trace.js';

/** A full collection (mark-compact) of the daemon's heap: when its pause began (epoch ms) and how long it held the thread. */
export interface FullCollection {
  at: number;
  ms: number;
}

/** One delivery's marks: the first time of each step, and how many reads of the key it took. */
export interface TracedDelivery {
  at: Partial<Record<DeliveryStep, number>>;
  reads: number;
}

const file = process.env.MESH_HOST_TRACE_FILE;
const collections = process.env.MESH_HOST_GC_FILE;
const open: TracedDelivery[] = [];
// The worker's steps end at 'done', the sender's at 'removed': the next delivery's notice may come
// before the last one's acknowledgement, so each step goes to the oldest delivery still short of it.
const SENDER: DeliveryStep[] = ['sending', 'signed', 'acknowledged', 'removed'];

if (file) {
  subscribe('mesh-host:delivery', (message) => {
    const { step, at } = message as DeliveryMark;
    if (step === 'notice') return void open.push({ at: { notice: at }, reads: 0 });
    const last = SENDER.includes(step) ? 'removed' : 'done';
    // A read of the key that found no newer value is tried again: the last read before the check counts.
    const again = step === 'read' || step === 'got';
    const delivery = open.find((d) => d.at[last] === undefined && (d.at[step] === undefined || (again && d.at.verified === undefined)));
    if (!delivery) return;
    if (step === 'read') delivery.reads++;
    if (again) delivery.at[step] = at;
    else delivery.at[step] ??= at;
    // The sender starts once the head is renamed, beside the worker's end: a delivery is whole with both.
    if (delivery.at.removed !== undefined && delivery.at.done !== undefined) {
      open.splice(open.indexOf(delivery), 1);
      appendFileSync(file, `${JSON.stringify(delivery)}\n`);
    }
  });
}

// The full collections, to a file of their own: V8 tells them after the pause, so they are matched to
// deliveries by time afterwards (bench/link-trace.ts).
if (collections) {
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if ((entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind !== constants.NODE_PERFORMANCE_GC_MAJOR) continue;
      appendFileSync(collections, `${JSON.stringify({ at: performance.timeOrigin + entry.startTime, ms: entry.duration } satisfies FullCollection)}\n`);
    }
  }).observe({ entryTypes: ['gc'] });
}
