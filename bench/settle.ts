import { readFileSync, readdirSync } from 'node:fs';
import { machineTicks } from './stats.js';

/** The machine's CPU time (busy and all, in ticks) and the sectors its whole disks have written so far. */
interface Counters {
  busy: number;
  total: number;
  sectorsWritten: number;
}

function counters(): Counters {
  const { busy, total } = machineTicks();
  const disks = new Set(readdirSync('/sys/block'));
  let sectorsWritten = 0;
  for (const line of readFileSync('/proc/diskstats', 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length > 9 && disks.has(f[2]!)) sectorsWritten += Number(f[9]);
  }
  return { busy, total, sectorsWritten };
}

/** What quiet is: seconds in a row, each under this share of CPU busy and this many KB written. */
export const QUIET = { seconds: 3, busyShare: 0.25, writtenKb: 256 } as const;

export interface Settled {
  /** Seconds waited. */
  waitedS: number;
  /** Whether the machine went quiet before the bound. */
  quiet: boolean;
  /** The last second's share of CPU busy (both cores) and KB written to disk. */
  busyShare: number;
  writtenKb: number;
}

/**
 * Waits until the machine is quiet (QUIET: a few seconds in a row with the CPU mostly idle and little
 * written to its disks), at most `boundS`. A benchmark's earlier part leaves work behind
 * it (the file system's writes of trees it removed, a container's end); a figure of the daemon alone is
 * taken once it has passed, and the page says how long that took.
 */
export async function settle(boundS = 120): Promise<Settled> {
  const began = Date.now();
  let quietFor = 0;
  let last = counters();
  for (;;) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = counters();
    const busyShare = (now.busy - last.busy) / Math.max(1, now.total - last.total);
    const writtenKb = ((now.sectorsWritten - last.sectorsWritten) * 512) / 1024;
    last = now;
    quietFor = busyShare < QUIET.busyShare && writtenKb < QUIET.writtenKb ? quietFor + 1 : 0;
    const waitedS = (Date.now() - began) / 1000;
    if (quietFor >= QUIET.seconds || waitedS >= boundS) return { waitedS, quiet: quietFor >= QUIET.seconds, busyShare, writtenKb };
  }
}
