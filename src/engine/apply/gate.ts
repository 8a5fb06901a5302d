import type { Declaration, Mode } from '../../core/declaration/schema.js';
import type { HandlerTable } from '../converge/converge.js';
import type { Mark } from '../../core/declaration/order.js';
import type { RefusalKind } from '../../core/system/errors.js';
import { orderProblem } from './step-order.js';

/** Why a declaration may not be applied, as data: a kind, a reason, and each thing wrong named. */
export interface Refusal {
  kind: RefusalKind;
  reason: string;
  details: string[];
}

export interface GateFacts {
  /** What was applied last; the order is checked against it unless the lifecycle ordered the request already. */
  lastApplied: Mark | undefined;
  /** The lifecycle ordered this request (the daemon's worker): its order is not checked again. */
  ordered?: boolean;
  recordedMode: Mode | undefined;
  /** Only a signed declaration the link delivers may change the recorded mode. */
  mayChangeMode: boolean;
  /** What this host can apply: a resource type without a handler here is refused. */
  handlers: HandlerTable;
}

const OTHER_MODE_ACT: Record<Mode, string> = { adopted: 'adopt', converged: 'converge' };

/** The modes must agree unless the link delivered it; refusal names both and the act that changes it. */
export function modeProblem(recorded: Mode | undefined, declared: Mode, mayChange: boolean): string | undefined {
  if (recorded === undefined || recorded === declared || mayChange) return undefined;
  return `the declaration says ${declared}, but this machine is recorded ${recorded}; only a signed declaration the mesh delivers changes the mode (the mesh's '${OTHER_MODE_ACT[declared]}' act)`;
}

/** Each resource whose type this host has no handler for, by JSON path and id. */
export function unsupportedResources(declaration: Declaration, handlers: HandlerTable): string[] {
  const found: string[] = [];
  declaration.resources.forEach((r, i) => {
    if (!Object.hasOwn(handlers, r.type) || handlers[r.type] === undefined) found.push(`/resources/${i} (${r.type} '${r.id}'): this host has no handler for ${r.type} resources`);
  });
  return found;
}

/**
 * The one gate every apply passes before anything on the machine is read or touched, whichever way
 * the declaration came (a file, genesis, a reconcile, a delivery): what this host cannot apply, an
 * order the store refuses (for a request the lifecycle did not order: a command run by hand), a mode
 * this path may not change. Undefined when it may go on.
 */
export function gate(declaration: Declaration, digest: string, facts: GateFacts): Refusal | undefined {
  const unsupported = unsupportedResources(declaration, facts.handlers);
  if (unsupported.length > 0) {
    return { kind: 'unsupported', reason: `${unsupported.length} resource${unsupported.length === 1 ? '' : 's'} of a type this host cannot apply; nothing was touched`, details: unsupported };
  }
  const stale = facts.ordered ? undefined : orderProblem(declaration, digest, facts.lastApplied);
  if (stale) return { kind: 'stale', reason: stale, details: [] };
  const mode = modeProblem(facts.recordedMode, declaration.mode, facts.mayChangeMode);
  if (mode) return { kind: 'mode', reason: mode, details: [] };
  return undefined;
}
