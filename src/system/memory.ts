import { setFlagsFromString } from 'node:v8';

/**
 * Keeps a long-running host's heap close to what it holds. Two V8 settings, made from inside the
 * process because a single executable takes no V8 flags on its command line and NODE_OPTIONS voids its
 * code cache; both are honoured from the moment they are set, so this runs before the daemon allocates:
 * - the young generation stays at its first size: V8 doubles its semi-spaces as a busy process
 *   allocates (up to 16 MB each on this kind of machine) and they stay grown; the cost is more frequent,
 *   shorter scavenges;
 * - the old generation may grow 10% past what survived the last full collection before the next one,
 *   instead of the half or more V8 allows by default: each apply leaves its records, plan and report in
 *   the old generation when they outlive a scavenge, and a daemon applying back to back went up and down
 *   between 73 and 88 MB where it now holds about 69. The cost is more frequent full collections of a
 *   small heap.
 */
export function keepHeapSmall(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
  setFlagsFromString('--heap-growing-percent=10');
}
