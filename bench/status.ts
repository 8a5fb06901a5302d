import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Resource } from '../src/core/declaration/schema.js';
import { yielder } from '../src/core/system/yielder.js';
import { control, enrolledHost, unitNodeFlags } from '../test/support/daemon.js';
import { NatsServer, natsUnavailable } from '../test/support/nats.js';
import { fmt, loadAverage, median, percentile } from './stats.js';

/** Status requests one after another until `until` settles (or `count` are done): their round trips. */
async function roundTrips(nc: NatsConnection, node: string, until: { done: boolean } | number): Promise<number[]> {
  const out: number[] = [];
  for (;;) {
    if (typeof until === 'number' ? out.length >= until : until.done) return out;
    const t = performance.now();
    await nc.request(`mesh.node.${node}.status`, '', { timeout: 30_000 });
    out.push(performance.now() - t);
  }
}

interface Stall {
  at: number;
  ms: number;
}

/** The stalls the daemon logged (`loop: the event loop was held`), each ending at `at` (epoch ms). */
function stallsOf(log: string): Stall[] {
  const out: Stall[] = [];
  for (const line of log.split('\n')) {
    if (!line.includes('loop: the event loop was held')) continue;
    const { time, stalledMs } = JSON.parse(line) as { time: number; stalledMs: number };
    out.push({ at: time, ms: stalledMs });
  }
  return out;
}

function stallLine(stalls: Stall[], window: { from: number; to: number }): string {
  const inside = stalls.filter((s) => s.at >= window.from && s.at <= window.to).map((s) => s.ms);
  return inside.length === 0 ? 'none' : `${inside.length}, ${fmt(Math.max(...inside))} ms`;
}

/**
 * The daemon keeps answering while it applies: the round trip of a status request (over a real
 * nats-server, `mesh-host run` as a process) while a first apply of 10,000 files runs, next to idle;
 * and what the yields cost the no-op path.
 */
export async function benchStatus(files = 10_000): Promise<string[]> {
  const unavailable = natsUnavailable();
  if (unavailable) return ['## Status while applying', '', `Not measured: ${unavailable}.`];
  const dir = (await import('node:fs')).mkdtempSync(join((await import('node:os')).tmpdir(), 'mesh-host-status-'));
  // A 10,000-file declaration passes the default 1 MB payload once signed: this server takes 8 MB.
  const configFile = join(dir, 'nats.conf');
  writeFileSync(configFile, 'max_payload: 8388608\n');
  const server = await NatsServer.start({ configFile });
  // STATUS_PROFILE=DIR: the daemon's CPU profile is written there, and its log (with each stall of its event loop).
  const profileDir = process.env.STATUS_PROFILE;
  const profileFlags = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
  const h = await enrolledHost([server.url], { config: { reconcileIntervalMs: 3_600_000 }, nodeFlags: [...unitNodeFlags(), ...profileFlags] });
  try {
    await h.start();
    await h.waitForReports(1);
    const nc = await control([server.url]);
    await roundTrips(nc, h.node, 20); // warm
    const idle = await roundTrips(nc, h.node, 300);
    const resources: Resource[] = [{ type: 'directory', id: 'a', path: '/srv/a' }];
    for (let d = 0; d < 10; d++) resources.push({ type: 'directory', id: `d${d}`, path: `/srv/a/${d}` });
    for (let i = 0; i < files; i++) resources.push({ type: 'file', id: `f${i}`, path: `/srv/a/${i % 10}/${i}`, content: `${i}\n` });
    /** Puts the declaration and asks for status until its report (the `reports`-th) is in: the round trips and the put-to-report time. */
    const askWhileApplying = async (reports: number) => {
      const applying = { done: false };
      const started = performance.now();
      const from = Date.now();
      await h.put({ epoch: 1, sequence: 2, resources });
      const waited = h.waitForReports(reports, 600_000).then(() => {
        applying.done = true;
      });
      const trips = await roundTrips(nc, h.node, applying);
      await waited;
      return { trips, ms: performance.now() - started, window: { from, to: Date.now() } };
    };
    const { trips: during, ms: applyMs, window: firstWindow } = await askWhileApplying(2);
    // The no-op: the same declaration put again (a new revision of the same bytes) is applied again and
    // reported, every file checked and none written; status asked throughout, as above.
    const { trips: duringNoop, ms: noopMs, window: noopWindow } = await askWhileApplying(3);
    const after = await roundTrips(nc, h.node, 300);
    await nc.close();
    await h.stop();
    if (profileDir) writeFileSync(join(profileDir, 'daemon.log'), h.log());
    const held = stallsOf(h.log());

    // The yields' cost on the no-op path: the pause called once per resource, 10,000 times, in a loop of
    // the no-op's own pace (a few microseconds a file), against the same loop without it.
    const spin = (us: number) => {
      const end = performance.now() + us / 1000;
      while (performance.now() < end);
    };
    const loop = async (pause?: () => Promise<void>) => {
      const t = performance.now();
      for (let i = 0; i < files; i++) {
        spin(5);
        if (pause) await pause();
      }
      return performance.now() - t;
    };
    const bare: number[] = [];
    const paused: number[] = [];
    for (let i = 0; i < 7; i++) {
      bare.push(await loop());
      paused.push(await loop(yielder()));
    }
    return [
      '## Status while applying (a real nats-server on loopback, `mesh-host run` as a process)',
      '',
      `Round trip of \`mesh.node.<node>.status\` requests sent one after another: idle, and during the daemon's first apply of`,
      `${files.toLocaleString('en')} files in 10 directories (delivered over the link, ${fmt(applyMs)} ms from the put to its report). The delivery's check`,
      '(between its parses and through its validation) and the apply\'s check yield to the event loop every 4 ms of work, the writes wait on',
      'libuv\'s threads, and the daemon opens its own last store without reading it again, so it answers throughout.',
      '',
      '| figure | idle | during the apply | target |',
      '| --- | ---: | ---: | ---: |',
      `| status round trip, median | ${fmt(median(idle))} ms (${idle.length}) | ${fmt(median(during))} ms (${during.length}) | — |`,
      `| status round trip, p99 | ${fmt(percentile(idle, 99))} ms | ${fmt(percentile(during, 99))} ms | under 100 ms during |`,
      `| status round trip, max | ${fmt(Math.max(...idle))} ms | ${fmt(Math.max(...during))} ms | — |`,
      '',
      `The no-op apply of the same ${files.toLocaleString('en')} files (put again, checked, nothing written): ${fmt(noopMs)} ms from the put to its report;`,
      `status during it median ${fmt(median(duringNoop))} ms, p99 ${fmt(percentile(duringNoop, 99))} ms, max ${fmt(Math.max(...duringNoop))} ms (${duringNoop.length}); idle after the`,
      `apply, with the ${files.toLocaleString('en')}-record store saved, median ${fmt(median(after))} ms, p99 ${fmt(percentile(after, 99))} ms (the saved store is parsed again only when it changed).`,
      `Event-loop stalls of 20 ms or more the daemon logged (count, longest): during the first apply ${stallLine(held, firstWindow)}; during the no-op ${stallLine(held, noopWindow)}.`,
      `Load average while measuring: ${loadAverage()} (2 cores).`,
      '',
      `The yields on the no-op path: a loop of ${files.toLocaleString('en')} steps of 5 µs (the no-op's pace per file) took ${fmt(median(bare))} ms bare`,
      `and ${fmt(median(paused))} ms with the pause after each step (median of 7): ${fmt(median(paused) - median(bare))} ms for the whole no-op.`,
    ];
  } finally {
    await h.cleanup();
    await server.stop();
    (await import('node:fs')).rmSync(dir, { recursive: true, force: true });
  }
}
