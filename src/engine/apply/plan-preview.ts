import { markOf } from '../../core/declaration/order.js';
import { receiveDeclaration, type Received } from '../../core/declaration/load.js';
import type { SignerRule } from '../../core/declaration/envelope.js';
import type { PlanAnswer, PlanRequest } from '../report/report-preview.js';
import type { Step } from '../converge/handler-types.js';
import { HostError } from '../../core/system/errors.js';
import { applyDeclaration, type HostEnv } from './apply.js';

/** Room left in an answer for its subject and headers. */
const ANSWER_HEADROOM = 1024;

/**
 * A plan request checked as a delivery is checked: the declaration signed as the trust root held requires, for this
 * node, in the vocabulary. A request that fails is answered with the refusal and never planned: the
 * host reads nothing of the machine or the store for it, and counts and reports nothing.
 */
export async function checkPlanRequest(bytes: Uint8Array, host: { node: string; rule: SignerRule | undefined }): Promise<{ received: Received; diff: boolean } | PlanAnswer> {
  const source = 'the plan request';
  const refusedAs = (refusal: Extract<PlanAnswer, { outcome: 'refused' }>['refusal'], reason: string, details: string[] = []): PlanAnswer => ({ node: host.node, outcome: 'refused', refusal, reason, details });
  let request: PlanRequest;
  try {
    request = JSON.parse(Buffer.from(bytes).toString('utf8')) as PlanRequest;
    if (typeof request !== 'object' || request === null || request.envelope === undefined) throw new Error('it carries no envelope');
  } catch (err) {
    return refusedAs('invalid', `${source} is not a plan request: ${(err as Error).message}`);
  }
  if (!host.rule) return refusedAs('forged', `${source}: no control-plane key is pinned on this host; refused`);
  try {
    const received = await receiveDeclaration(Buffer.from(JSON.stringify(request.envelope)), { source, node: host.node, requireSignature: true, rule: host.rule });
    return { received, diff: request.diff === true };
  } catch (err) {
    if (!(err instanceof HostError) || err.kind === undefined) throw err;
    return refusedAs(err.kind, err.message, err.details);
  }
}

/**
 * The plan this host would make for a checked declaration: the apply path's dry run (order and mode
 * checked, the machine read, nothing fetched, written, saved, counted or reported), as an answer that
 * fits in one message under `limit` bytes (diffs are left out first, and it says so).
 */
export async function previewDeclaration(env: HostEnv, received: Received, options: { diff: boolean; limit: number }): Promise<PlanAnswer> {
  const declaration = markOf(received.declaration, received.digest);
  const result = await applyDeclaration(env, { received, origin: 'mesh', trigger: 'delivery', dryRun: true, mayChangeMode: true, diff: options.diff });
  const changing = (steps: readonly Step[]) => steps.filter((s) => s.changes.length > 0).map(({ resource, type, target, verb, changes }) => ({ resource, type, target, verb, changes }));
  if (result.kind === 'refused') {
    return { node: env.node, outcome: 'refused', refusal: result.refusal, reason: result.reason, details: result.details, declaration, ...(result.plan ? { steps: changing(result.plan.steps) } : {}) };
  }
  const steps = changing(result.plan.steps);
  const answer: PlanAnswer = {
    node: env.node,
    outcome: 'planned',
    declaration,
    steps,
    unchanged: result.plan.steps.length - steps.length,
    held: steps.filter((s) => s.changes.some((c) => c.kind === 'hold')).map((s) => ({ resource: s.resource, target: s.target })),
    ...(result.plan.diffs ? { diffs: result.plan.diffs } : {}),
  };
  if (answer.diffs && Buffer.byteLength(JSON.stringify(answer)) > options.limit - ANSWER_HEADROOM) {
    delete answer.diffs;
    answer.diffsLeftOut = `the diffs would pass the server's message limit (${options.limit} bytes): see them on the host with mesh-host reconcile --dry-run --diff`;
  }
  return answer;
}
