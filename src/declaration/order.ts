/**
 * The order of declarations. Pure: the lifecycle machine decides with it, and so does the apply path
 * for a declaration applied by hand.
 *
 * (epoch, sequence) order: when both carry an epoch, the epoch decides and the sequence within it.
 * When either has none, the sequence alone decides: a controller that numbers without epochs still
 * numbers in order, and a delivery with a lower sequence than one held is older. Two declarations equal
 * in order are the same declaration only when their digests are the same.
 */
export interface OrderMark {
  epoch?: number;
  sequence: number;
  digest: string;
}

/** Negative when a is older than b, positive when newer, 0 when equal in order. */
export function compareOrder(a: Omit<OrderMark, 'digest'>, b: Omit<OrderMark, 'digest'>): number {
  if (a.epoch !== undefined && b.epoch !== undefined && a.epoch !== b.epoch) return a.epoch - b.epoch;
  return a.sequence - b.sequence;
}

/** `(epoch 2, sequence 5)`, or `(sequence 5)` without an epoch. */
export function describeOrder(mark: Omit<OrderMark, 'digest'>): string {
  return mark.epoch === undefined ? `(sequence ${mark.sequence})` : `(epoch ${mark.epoch}, sequence ${mark.sequence})`;
}

/** One declaration the host holds, named for refusals: "the last applied", "the kept declaration"…. */
export interface HeldMark {
  what: string;
  mark: OrderMark;
}

/**
 * Why a candidate may not follow what is held: older than one of them, or equal in order to one with
 * another digest. Undefined when it may.
 */
export function orderConflict(candidate: OrderMark, held: ReadonlyArray<HeldMark | undefined>): string | undefined {
  for (const h of held) {
    if (!h) continue;
    const order = compareOrder(candidate, h.mark);
    if (order < 0) return `stale: ${describeOrder(candidate)} is older than ${h.what} ${describeOrder(h.mark)}`;
    if (order === 0 && candidate.digest !== h.mark.digest) {
      return `stale: ${describeOrder(candidate)} is already ${h.what}, with digest ${h.mark.digest}; this one is ${candidate.digest}`;
    }
  }
  return undefined;
}
