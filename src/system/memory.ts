import { getHeapStatistics, setFlagsFromString } from 'node:v8';

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
 * - no baseline (Sparkplug) compiler: its machine code for every warm function took over a megabyte of
 *   code space, and the daemon's hot paths (the check of every declared path) are optimized all the
 *   same; the rest runs in the interpreter, which a mostly waiting daemon does not feel.
 * How full collections run is then fitted to each apply (heapFitter).
 */
export function keepHeapSmall(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
  setFlagsFromString('--heap-growing-percent=10');
  setFlagsFromString('--no-sparkplug');
}

/** Above either, marking early (below) pauses the daemon for too long. */
export const SMALL_HEAP_BOUNDS = { heapBytes: 32 << 20, resources: 2_000 } as const;

/**
 * Whether the apply about to run is small: its heap now, and the declaration it goes through. For a
 * large heap, or an apply about to build one (a 10,000-file declaration), each full collection's last
 * pause is long, and more of them held the event loop up to 100 ms at a time.
 */
export function isSmallHeap(heapBytes: number, resources: number): boolean {
  return heapBytes < SMALL_HEAP_BOUNDS.heapBytes && resources < SMALL_HEAP_BOUNDS.resources;
}

/**
 * For a small heap, a full collection's marking starts once the old generation has used half of what V8
 * would let it reach, not near the end: the garbage of back-to-back applies is found while it is a few
 * megabytes (a 100-file daemon applying back to back went up to 66 MB without it, and stays at 62-64
 * with it), and the marking runs beside the daemon on V8's helper thread. For a large heap, V8's own
 * choice. (Compacting at every full collection as well gave a 100-file daemon 2-3 MB back, but its
 * pauses raised the delivery-to-report p99 from 37 to 55 ms: not kept.)
 */
const MARKING = { small: '--incremental-marking-hard-trigger=50', large: '--incremental-marking-hard-trigger=0' } as const;

/** Fits V8's full collections to the apply about to run (see isSmallHeap); nothing is set when the answer is unchanged. */
export function heapFitter(): (resources: number) => void {
  let small: boolean | undefined;
  return (resources) => {
    const now = isSmallHeap(getHeapStatistics().used_heap_size, resources);
    if (now === small) return;
    small = now;
    setFlagsFromString(now ? MARKING.small : MARKING.large);
  };
}
