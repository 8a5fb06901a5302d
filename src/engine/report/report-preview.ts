import type { Mark } from '../../core/declaration/order.js';
import type { Step } from '../converge/handler-types.js';
import type { RefusalKind } from '../../core/system/errors.js';
import type { FileDiff } from './report.js';

/** What `meshctl plan` sends a host on `mesh.node.<node>.plan`: a declaration signed for it, and whether to diff. */
export interface PlanRequest {
  envelope: unknown;
  diff?: boolean;
}

/**
 * A host's answer: the plan it would make for the declaration (only the steps that change something,
 * and how many are already as declared), what it would hold, its content diffs when asked; or what it
 * would refuse and why. Making it changed nothing on the host.
 */
export type PlanAnswer =
  | {
      node: string;
      outcome: 'planned';
      declaration: Mark;
      steps: Step[];
      unchanged: number;
      /** Steps that would leave what they found as it is (an adopted machine's), by resource and path. */
      held: Array<{ resource: string; target: string }>;
      diffs?: FileDiff[];
      /** Why the diffs were left out (too large for one message). */
      diffsLeftOut?: string;
    }
  | {
      node: string;
      outcome: 'refused';
      refusal: RefusalKind;
      reason: string;
      details: string[];
      declaration?: Mark;
      /** The steps it had planned, when the refusal came after planning (the plan cannot be applied as the machine stands). */
      steps?: Step[];
    };
