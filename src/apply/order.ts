import type { Declaration } from '../declaration/schema.js';
import type { AppliedMark } from '../store/state.js';

/**
 * With an epoch, a declaration older than the last applied (epoch, sequence) is refused, and so is
 * the same (epoch, sequence) with another digest. Without an epoch there is no such check.
 * Returns the reason for refusing, or undefined.
 */
export function orderProblem(declaration: Declaration, digest: string, last: AppliedMark | undefined): string | undefined {
  if (declaration.epoch === undefined || last === undefined || last.epoch === undefined) return undefined;
  const older = declaration.epoch < last.epoch || (declaration.epoch === last.epoch && declaration.sequence < last.sequence);
  const said = `(epoch ${declaration.epoch}, sequence ${declaration.sequence})`;
  const applied = `(epoch ${last.epoch}, sequence ${last.sequence})`;
  if (older) return `stale: ${said} is older than the last applied ${applied}`;
  if (declaration.epoch === last.epoch && declaration.sequence === last.sequence && digest !== last.digest) {
    return `${said} was already applied with digest ${last.digest}; this one is ${digest}`;
  }
  return undefined;
}
