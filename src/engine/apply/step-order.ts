import type { Declaration } from '../../core/declaration/schema.js';
import { compareOrder, describeOrder, type Mark } from '../../core/declaration/order.js';

/**
 * A declaration applied by hand (a file, genesis, the reconcile of what is kept) against the last
 * applied: with an epoch on both, an older one is refused, and so is the same (epoch, sequence) with
 * another digest. Without an epoch there is no such check here: whoever applies a file by hand is at
 * the machine. What the link delivers is ordered by the lifecycle, with the sequence alone when there
 * is no epoch. Returns the reason for refusing, or undefined.
 */
export function orderProblem(declaration: Declaration, digest: string, last: Mark | undefined): string | undefined {
  if (declaration.epoch === undefined || last === undefined || last.epoch === undefined) return undefined;
  const order = compareOrder(declaration, last);
  const said = describeOrder(declaration);
  if (order < 0) return `stale: (${said}) is older than the last applied (${describeOrder(last)})`;
  if (order === 0 && digest !== last.digest) return `(${said}) was already applied with digest ${last.digest}; this one is ${digest}`;
  return undefined;
}
