import { readFileSync } from 'node:fs';

/** Time, and the chance used to spread things out in it, passed in so that tests can hold both still or move them on. */
export interface Clock {
  now(): Date;
  /** A monotonic reading in milliseconds, for durations within this process. */
  monotonic(): number;
  /**
   * The machine's clock since its boot (CLOCK_BOOTTIME, read from /proc/uptime), with the boot's id: a
   * duration that must be compared between processes (an end stored for another process to read) is
   * measured on it, and no step of the wall clock moves it.
   */
  boot(): { bootId: string; ms: number };
  sleep(ms: number): Promise<void>;
  /** Calls fn once after ms; the function returned cancels it (harmless once it has fired). */
  after(ms: number, fn: () => void): () => void;
  /** A number in [0, 1): jitter, so that a fleet started together does not act in step. */
  random(): number;
}

let bootId: string | undefined;

export const systemClock: Clock = {
  now: () => new Date(),
  monotonic: () => performance.now(),
  boot: () => ({ bootId: (bootId ??= readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()), ms: Math.round(Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 1000) }),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  after: (ms, fn) => {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
  random: () => Math.random(),
};
