import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * A pause for long loops of synchronous work (the check of 10,000 files): it yields to the event loop
 * once `sliceMs` has passed since the last yield, so requests, heartbeats and deliveries are served
 * within a slice; when the loop is quick, it costs one clock read per call.
 */
export function yielder(sliceMs = 8): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < sliceMs) return;
    await nextTurn();
    since = performance.now();
  };
}
