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

/** Above either, the small heap's collections (below) pause the daemon for too long. */
export const SMALL_HEAP_BOUNDS = { heapBytes: 32 << 20, resources: 2_000 } as const;

/**
 * Whether the apply about to run is small: its heap now, and the declaration it goes through. For a
 * large heap, or an apply about to build one (a 10,000-file declaration), the small heap's collections
 * held the event loop over 100 ms at a time.
 */
export function isSmallHeap(heapBytes: number, resources: number): boolean {
  return heapBytes < SMALL_HEAP_BOUNDS.heapBytes && resources < SMALL_HEAP_BOUNDS.resources;
}

/**
 * Full collections for a small heap: the marking starts once the old generation has used 15% of what V8
 * would let it reach, so the garbage of back-to-back applies is found while it is a few megabytes (the
 * marking runs beside the daemon, on V8's helper thread), and no collection is made to compact. A
 * compacting one copies every live object of the old generation: on this kind of machine about 10 ms
 * of pause for a 100-file daemon's 8 MB, and one in about 15 back-to-back deliveries had one, which made
 * the p99 from delivery to report (about 30 ms a delivery so paused, against 11 for the others). Without
 * it the pause is 2 to 3 ms. Paired against compacting at 25% (the link benchmark, 450 deliveries each,
 * two runs): p99 0.78x and 0.85x, median 1.05x and 1.02x, and the daemon's RSS over 1,000 back-to-back
 * applies at most 63.4 and 62.7 MB against 61 (mostly-free pages are kept longer; V8's own heuristics still
 * compact pages it finds fragmented). Marking at a quarter without compaction reached 64.8 MB;
 * at half, 64-66 MB; neither setting, 69-71. For a large heap, V8's own choices.
 */
const SMALL = ['--no-compact-on-every-full-gc', '--incremental-marking-hard-trigger=15'];
const LARGE = ['--no-compact-on-every-full-gc', '--incremental-marking-hard-trigger=0'];

/** Fits V8's full collections to the apply about to run (see isSmallHeap); nothing is set when the answer is unchanged. */
export function heapFitter(): (resources: number) => void {
  let small: boolean | undefined;
  return (resources) => {
    const now = isSmallHeap(getHeapStatistics().used_heap_size, resources);
    if (now === small) return;
    small = now;
    for (const flag of now ? SMALL : LARGE) setFlagsFromString(flag);
  };
}
