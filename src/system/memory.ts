import { setFlagsFromString } from 'node:v8';

/**
 * Keeps a long-running host's memory close to what it holds. V8 settings, made from inside the
 * process because a single executable takes no V8 flags on its command line and NODE_OPTIONS voids its
 * code cache; each is honoured from the moment it is set, so this runs before the daemon allocates:
 * - the young generation stays at its first size: V8 doubles its semi-spaces as a busy process
 *   allocates (up to 16 MB each on this kind of machine) and they stay grown; the cost is more frequent,
 *   shorter scavenges;
 * - the old generation may grow 10% past what survived the last full collection before the next one,
 *   instead of the half or more V8 allows by default: each apply leaves its records, plan and report in
 *   the old generation when they outlive a scavenge. The cost is more frequent full collections of a
 *   small heap;
 * - every full collection also compacts: V8 otherwise sweeps in place and keeps pages that are mostly
 *   free, and a daemon applying back to back held about 15 MB of old-generation pages for 10 MB of
 *   objects. Moving the survivors of a heap this small costs a few milliseconds a collection;
 * - the marking of a full collection starts once the old generation has used half of what V8 would let
 *   it reach, not near the end: the garbage of back-to-back applies is found while it is a few megabytes,
 *   and the marking runs beside the daemon on V8's helper thread;
 * - no baseline (Sparkplug) compiler: its machine code for every warm function took over a megabyte of
 *   code space, and the daemon's hot paths (the check of every declared path) are optimized all the
 *   same; the rest runs in the interpreter, which a mostly waiting daemon does not feel.
 */
export function keepHeapSmall(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
  setFlagsFromString('--heap-growing-percent=10');
  setFlagsFromString('--compact-on-every-full-gc');
  setFlagsFromString('--incremental-marking-hard-trigger=50');
  setFlagsFromString('--no-sparkplug');
}
