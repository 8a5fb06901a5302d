/** Time, and the chance used to spread things out in it, passed in so that tests can hold both still or move them on. */
export interface Clock {
  now(): Date;
  /** A monotonic reading in milliseconds, for durations. */
  monotonic(): number;
  sleep(ms: number): Promise<void>;
  /** Calls fn once after ms; the function returned cancels it (harmless once it has fired). */
  after(ms: number, fn: () => void): () => void;
  /** A number in [0, 1): jitter, so that a fleet started together does not act in step. */
  random(): number;
}

export const systemClock: Clock = {
  now: () => new Date(),
  monotonic: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  after: (ms, fn) => {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
  random: () => Math.random(),
};
