/** Time, passed in so that tests can hold it still or move it on. */
export interface Clock {
  now(): Date;
  /** A monotonic reading in milliseconds, for durations. */
  monotonic(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => new Date(),
  monotonic: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};
