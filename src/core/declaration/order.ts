/**
 * The order of declarations. Pure: the lifecycle machine decides with it, and so does the apply path
 * for a declaration applied by hand.
 *
 * (epoch, sequence) order: when both carry an epoch, the epoch decides and the sequence within it.
 * When either has none, the sequence alone decides: a controller that numbers without epochs still
 * numbers in order, and a delivery with a lower sequence than one held is older. Two declarations equal
 * in order are the same declaration only when their digests are the same.
 */
export interface Mark {
  epoch?: number;
  sequence: number;
  digest: string;
}

/** A place in the order without a digest: a number given to a declaration not yet signed. */
export type Order = Omit<Mark, 'digest'>;

/**
 * The mark alone, of anything that carries one (a delivery, the last applied with its time), or of a
 * declaration and the digest of its bytes: what is kept, ordered and reported, with nothing else on it
 * and no `epoch` key when there is none.
 */
export function markOf(mark: Mark): Mark;
export function markOf(order: Order, digest: string): Mark;
export function markOf(order: Order & { digest?: string }, digest?: string): Mark {
  return { ...orderOf(order), digest: digest ?? (order as Mark).digest };
}

/** The (epoch, sequence) alone, with no `epoch` key when there is none. */
export function orderOf(order: Order): Order {
  return order.epoch === undefined ? { sequence: order.sequence } : { epoch: order.epoch, sequence: order.sequence };
}

/** Negative when a is older than b, positive when newer, 0 when equal in order. */
export function compareOrder(a: Order, b: Order): number {
  if (a.epoch !== undefined && b.epoch !== undefined && a.epoch !== b.epoch) return a.epoch - b.epoch;
  return a.sequence - b.sequence;
}

/**
 * The mark as it is read out of anything untyped that carries one: a declaration's payload, a report's
 * `declaration`, a heartbeat. Undefined unless `sequence` is a number; an `epoch` that is not a number
 * is no epoch. Every reader of a declaration's mark reads it here, never by hand.
 */
export function orderIn(value: unknown): Order | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { epoch, sequence } = value as { epoch?: unknown; sequence?: unknown };
  if (typeof sequence !== 'number') return undefined;
  return typeof epoch === 'number' ? { epoch, sequence } : { sequence };
}

/** The epoch alone, of a declaration not numbered yet (a file meshctl numbers): undefined unless a number. */
export function epochIn(value: unknown): number | undefined {
  const epoch = typeof value === 'object' && value !== null ? (value as { epoch?: unknown }).epoch : undefined;
  return typeof epoch === 'number' ? epoch : undefined;
}

/** Whether two marks are the same place in the order: equal by compareOrder, and both with the same epoch or none. */
export function sameOrder(a: Order, b: Order): boolean {
  return compareOrder(a, b) === 0 && a.epoch === b.epoch;
}

/**
 * The mark as every output prints it (the fleet view, the page, reports, refusals, the command line):
 * `epoch 2, sequence 5`, or `sequence 5` without an epoch.
 */
export function describeOrder(mark: Order): string {
  return mark.epoch === undefined ? `sequence ${mark.sequence}` : `epoch ${mark.epoch}, sequence ${mark.sequence}`;
}

/** One declaration the host holds, named for refusals: "the last applied", "the kept declaration"…. */
export interface HeldMark {
  what: string;
  mark: Mark;
}

/**
 * Why a candidate may not follow what is held: older than one of them, or equal in order to one with
 * another digest. Undefined when it may.
 */
export function orderConflict(candidate: Mark, held: ReadonlyArray<HeldMark | undefined>): string | undefined {
  for (const h of held) {
    if (!h) continue;
    const order = compareOrder(candidate, h.mark);
    if (order < 0) return `stale: (${describeOrder(candidate)}) is older than ${h.what} (${describeOrder(h.mark)})`;
    if (order === 0 && candidate.digest !== h.mark.digest) {
      return `stale: (${describeOrder(candidate)}) is already ${h.what}, with digest ${h.mark.digest}; this one is ${candidate.digest}`;
    }
  }
  return undefined;
}
