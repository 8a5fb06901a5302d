import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * How much synchronous work runs before the event loop is let go. A status request, a heartbeat or a
 * delivery waits at most about this long (times the machine's load: on a busy machine a slice of
 * CPU is several of wall time); a yield costs a few microseconds, so 4 ms costs a 10,000-file no-op
 * well under a millisecond more than 8 ms did.
 */
export const SLICE_MS = 4;

/**
 * A pause for long loops of synchronous work (the check of 10,000 files, the validation of a
 * 10,000-resource declaration): it yields to the event loop once `sliceMs` has passed since the last
 * yield, so requests, heartbeats and deliveries are served within a slice; when the loop is quick, it
 * costs one clock read per call.
 */
export function yielder(sliceMs = SLICE_MS): () => Promise<void> {
  const due = pauseWhenDue(sliceMs);
  return async () => {
    await due();
  };
}

/**
 * The same pause for a hot loop: undefined, not a promise, while no turn is due, so the loop awaits
 * only a real pause (`const paused = pause(); if (paused) await paused;`) and 10,000 steps do not pay
 * a promise and a microtask each.
 */
export function pauseWhenDue(sliceMs = SLICE_MS): () => Promise<void> | undefined {
  let since = performance.now();
  const turn = async () => {
    await nextTurn();
    since = performance.now();
  };
  return () => (performance.now() - since < sliceMs ? undefined : turn());
}

/** Lets the event loop go once, between two steps of long work that cannot be cut finer (a parse of a megabyte). */
export async function letGo(): Promise<void> {
  await nextTurn();
}
