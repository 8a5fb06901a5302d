import type { Logger } from '../../core/system/log.js';

/** How often the event loop is sampled, and the lateness said as a stall. */
const TICK_MS = 10;
const STALL_MS = 20;

/**
 * Says (debug) when the daemon's event loop was held longer than `stallMs`: a timer that should fire
 * every few milliseconds and came late by that much means a status request, a heartbeat or a delivery
 * waited as long. Each stall is logged with what the lifecycle was doing, so a profile can be read
 * against it. Returns its stop.
 */
export function watchStalls(log: Logger, doing: () => unknown, stallMs = STALL_MS): () => void {
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    const late = now - last - TICK_MS;
    last = now;
    // `endedUs` is the monotonic clock a V8 CPU profile (`--cpu-prof`) counts in, to find the stall in it.
    if (late >= stallMs) log.debug({ stalledMs: Math.round(late), endedUs: Number(process.hrtime.bigint() / 1000n), state: doing() }, 'loop: the event loop was held');
  }, TICK_MS);
  timer.unref();
  return () => clearInterval(timer);
}
