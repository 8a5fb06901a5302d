import { execFileSync } from 'node:child_process';
import { NatsServer, natsUnavailable } from '../test/support/nats.js';
import { unitNodeFlags } from '../test/support/daemon.js';
import { cpuTicks, fmt, HZ, loadAverage, machineTicks, majorFaults, median, percentile, rssMb, statusMb } from './stats.js';
import { MEMORY_ENV } from '../src/host/release/release-units.js';
import { linkedHost } from './link-host.js';
import { traceDeliveries } from './link-trace.js';
import { linkAgainst } from './link-against.js';
import { linkThreshold } from './link-threshold.js';
import { QUIET, settle, type Settled } from './settle.js';

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

const load = () => loadAverage();

/** What the page says of the wait for a quiet machine before the first delivery. */
const settledSentence = (s: Settled) =>
  s.quiet
    ? `The first delivery waited ${s.waitedS.toFixed(0)} s for the machine to be quiet (${QUIET.seconds} s in a row with the CPU under ${QUIET.busyShare * 100}% busy and under ${QUIET.writtenKb} KB a second written).`
    : `The machine was not quiet within ${s.waitedS.toFixed(0)} s (the last second: CPU ${(s.busyShare * 100).toFixed(0)}% busy, ${s.writtenKb.toFixed(0)} KB written); the deliveries began anyway.`;

interface CpuAt {
  main: number;
  daemon: number;
  server: number;
  control: number;
  machine: ReturnType<typeof machineTicks>;
}

/** The CPU ticks so far of the daemon (its main thread, and all its threads), the server, this process (the control side), and the machine. */
const cpuOf = (daemon: number, server: number | undefined): CpuAt => ({
  main: cpuTicks(daemon, daemon),
  daemon: cpuTicks(daemon),
  server: server === undefined ? 0 : cpuTicks(server),
  control: cpuTicks(process.pid),
  machine: machineTicks(),
});

/** CPU milliseconds a delivery of each, between two readings, and the machine's busy share meanwhile. */
function cpuPerDelivery(before: CpuAt, after: CpuAt, deliveries: number) {
  const ms = (key: 'main' | 'daemon' | 'server' | 'control') => ((after[key] - before[key]) / HZ) * (1000 / deliveries);
  const busyShare = (after.machine.busy - before.machine.busy) / Math.max(1, after.machine.total - before.machine.total);
  return { main: ms('main'), daemon: ms('daemon'), server: ms('server'), control: ms('control'), busyShare };
}

/** What the page says of the daemon's main thread against the median: back to back, a delivery waits for that one thread. */
const cpuSentence = (mainMs: number, medianMs: number) =>
  `The daemon's main thread was busy ${fmt(mainMs)} ms a delivery, ${((mainMs / medianMs) * 100).toFixed(0)}% of the median: the control side puts the next declaration as soon as it hears a report, and the end of one delivery (the head made durable, the lock let go, the watchers started again, the acknowledgement) and the next one's work take turns on that thread, so back to back the median follows its CPU time, and with it how fast this shared machine's cores run at that moment.`;

/** Delivery-to-report latency over loopback, the daemon's RSS over 1,000 applies, its idle CPU, and where a delivery's time goes. */
export async function benchLink(): Promise<string[]> {
  const unavailable = natsUnavailable();
  if (unavailable) return ['## The link', '', `Not measured: ${unavailable}.`];
  const loadBefore = load();
  const server = await NatsServer.start();
  const nodeFlags = unitNodeFlags();
  // The unit's environment too (its malloc settings): the daemon is spawned with this process's environment.
  for (const assignment of MEMORY_ENV) {
    const [name, value] = assignment.split('=') as [string, string];
    process.env[name] = value;
  }
  const linked = await linkedHost(server.url, nodeFlags).catch(async (err: Error) => {
    await server.stop();
    throw err;
  });
  try {
    const { pid } = linked;
    const deliver = async () => (await linked.deliver()).ms;
    // Earlier parts of a whole run leave writes in the page cache (trees of 10,000 files, images): flushed
    // first, so that the daemon's fsyncs carry its own writes, not theirs.
    execFileSync('sync');
    // ... and the writes and work those parts set going (a removed tree's blocks, a container's end) have passed.
    const settled = await settle();
    for (let i = 0; i < 20; i++) await deliver(); // warm
    const latencies: number[] = [];
    const faultsBefore = majorFaults(pid);
    const cpuBefore = cpuOf(pid, server.pid);
    for (let i = 0; i < 250; i++) latencies.push(await deliver());
    const cpu = cpuPerDelivery(cpuBefore, cpuOf(pid, server.pid), latencies.length);
    const faults = majorFaults(pid) - faultsBefore;
    const rss: Array<[number, number]> = [[0, rssMb(pid)]];
    // Between the checkpoints too, every 10 applies: a collection can fall just before or after one.
    const sampled: number[] = [];
    const further: number[] = [];
    for (let i = 1; i <= 1000; i++) {
      further.push(await deliver());
      if (i % 250 === 0) rss.push([i, rssMb(pid)]);
      if (i % 10 === 0) sampled.push(rssMb(pid));
    }
    const highest = Math.max(...sampled);
    const anonMb = statusMb(pid, 'RssAnon');
    const fileMb = statusMb(pid, 'RssFile');
    // Idle: nothing but its timers (heartbeat, the key's re-read) for a minute.
    await wait(2000);
    const before = cpuTicks(pid);
    await wait(60_000);
    const idleCpuMs = ((cpuTicks(pid) - before) / HZ) * 1000;
    const byQuarter = [latencies, ...Array.from({ length: 4 }, (_, q) => further.slice(q * 250, (q + 1) * 250))].map((xs) => fmt(median(xs)));
    await linked.close();
    const breakdown = await traceDeliveries(server.url, nodeFlags, 250);
    const against = await linkAgainst(server.url, nodeFlags);
    const threshold = await linkThreshold(nodeFlags);
    return [
      '## The link (a real nats-server on loopback, `mesh-host run` as a process)',
      '',
      'A no-op declaration of 100 files (a new sequence each time, nothing to change), signed beforehand: from',
      '`kv.put` by the control side to the report arriving on `mesh.report.<node>` (the notice of the put and the',
      "direct get of the key, the signature check, keeping `declared.json` (written while the worker plans; durable",
      'before the machine is touched, and before the report and the head are committed), the apply under the lock, the',
      "outbox entry and the store's head written together with their fsyncs (the head's rename, the commit, once the entry is durable; the report",
      "leaves at the commit, while the rename is made durable, and its removal once acknowledged waits for that), the JetStream publish",
      `included; the file system is flushed before the first). The daemon runs as the shipped unit runs it (\`${MEMORY_ENV.join(' ')} node ${nodeFlags.join(' ')}\`, packaging/mesh-host.service).`,
      '',
      '| figure | value | target |',
      '| --- | ---: | ---: |',
      `| delivery-to-report, median of ${latencies.length} | ${fmt(median(latencies))} ms | at or under 10 ms (${median(latencies) <= 10 ? 'met' : 'missed'} on this run) |`,
      `| delivery-to-report, p99 | ${fmt(percentile(latencies, 99))} ms | at or under 30 ms (${percentile(latencies, 99) <= 30 ? 'met' : 'missed'} on this run) |`,
      `| delivery-to-report, median of each 250 in order: the ones above, then the 1,000 further applies below | ${byQuarter.join(' / ')} ms | (how the daemon's code warms: V8 optimizes a function once it has run often) |`,
      `| CPU per delivery over the ${latencies.length}: the daemon's main thread / all its threads; the server; the control side | ${fmt(cpu.main)} / ${fmt(cpu.daemon)}; ${fmt(cpu.server)}; ${fmt(cpu.control)} ms | (the machine ${(cpu.busyShare * 100).toFixed(0)}% busy meanwhile, of 2 cores) |`,
      `| daemon RSS after 0 / 250 / 500 / 750 / 1,000 further applies | ${rss.map(([, mb]) => mb.toFixed(0)).join(' / ')} MB | at or under 64 MB, flat |`,
      `| daemon RSS, every 10th of the 1,000 applies: mean / highest | ${fmt(sampled.reduce((a, b) => a + b, 0) / sampled.length)} / ${fmt(highest)} MB | at or under 64 MB (${highest <= 64 ? 'met' : 'missed'} on this run) |`,
      `| CPU time of the idle daemon over 60 s | ${fmt(idleCpuMs)} ms | nothing but its timers |`,
      `| the daemon's major page faults during the ${latencies.length} deliveries | ${faults} | (each a page of its code or a file read again from the disk) |`,
      '',
      `Load average before and after: ${loadBefore} / ${load()} (2 cores). ${settledSentence(settled)} ${cpuSentence(cpu.main, median(latencies))} The daemon runs at the default log level, as the unit runs`,
      `it (at debug it also samples its event loop every 10 ms to log stalls). Its RSS after the 1,000th apply is ${fileMb.toFixed(0)} MB of mapped`,
      `code (the Node executable's pages: a bare \`node\` maps 34 MB of them; the optimizing compiler and the crypto the host uses`,
      `add the rest) and ${anonMb.toFixed(0)} MB of heaps and stacks. The host makes V8 settings from inside the process (a single`,
      'executable takes no V8 flags on its command line): the young generation keeps its first size; the old generation grows 10%',
      "past what the last full collection kept, not V8's half or more; there is no baseline compiler (its code took over a megabyte);",
      'and while the heap and the apply are small (under 32 MB and 2,000 resources, as here) its marking starts at 15% of V8\'s limit',
      '(for a 10,000-file host the same held the event loop over 100 ms at a time, so V8 chooses there), and no full collection is made',
      'to compact: compacting every one kept the RSS at 59-61 MB but paused the daemon about 10 ms each (the split of the traced',
      'deliveries below shows what such pauses cost). Before these settings and the unit\'s malloc settings, a daemon applying back to back held',
      '69-71 MB (old-generation pages 15 MB for 9 MB of objects), and before the second it went up and down between 73 and 88 MB.',
      '',
      '### Where a delivery\'s time goes',
      '',
      'A second daemon, run the same way, with a listener of its delivery marks loaded (`node --import',
      'dist/bench/delivery-trace.js`; the marks go to a diagnostics channel, which costs the daemon as shipped one',
      'property read each), 250 deliveries after 20 to warm it. Each row is the stretch from one mark to the next;',
      'the medians and p99s of the rows above the whole do not add up to the whole\'s, their means do. The rows below it go',
      'beside the sender (the worker\'s end, from the head\'s rename) or come after the report is heard.',
      '',
      ...breakdown,
      '',
      '### A delivery\'s verification under a threshold of 2',
      '',
      ...threshold,
      ...(against.length > 0 ? ['', '### Against an earlier build', '', ...against] : []),
    ];
  } finally {
    await linked.close();
    await server.stop();
  }
}
