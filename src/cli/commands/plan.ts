import { readDeclarationFile, receiveDeclaration } from '../../declaration/load.js';
import { formatFleetPlan, planExitCode, type PlanLine } from '../../fleet/plan-view.js';
import { resolveTargets } from '../../fleet/targets.js';
import { readEnrolments } from '../../fleet/trust.js';
import { planSubject } from '../../link/wire.js';
import type { PlanAnswer, PlanRequest } from '../../report/preview.js';
import { refused, usageError } from '../../system/errors.js';
import { durationFlag, stringFlag, type CommandContext } from '../context.js';
import { connectControl } from '../link-flags.js';
import { targetFlags } from '../target-flags.js';
import { readSeed } from './keys.js';
import { countFlag } from './mesh.js';
import { numberAndSign, readNodeRecords } from './numbering.js';
import { fleetDeclaration } from './send-many.js';

const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * `meshctl plan FILE --nodes|--select|--all [--diff] [--timeout 10s] [--json]`: asks every chosen host,
 * at once, for the plan it would make for its own copy of the declaration (numbered and signed as
 * `send` would, but put nowhere). Each host checks the copy as it checks a delivery and answers on
 * `mesh.node.<node>.plan`, changing nothing. The changes are shown grouped across nodes; the exit
 * status is Puppet's --detailed-exitcodes (0, 2, 4, 6), or 1 when a node did not answer.
 */
export async function planCommand(ctx: CommandContext): Promise<number> {
  const choice = targetFlags(ctx);
  if (!choice) throw usageError("'plan' needs --nodes A,B, --select K=V or --all");
  const file = ctx.args[0]!;
  const fields = fleetDeclaration(file, readDeclarationFile(file));
  const key = stringFlag(ctx.flags, 'key');
  if (!key) throw usageError('each node is asked with its own signed copy: give --key FILE (or the mesh directory, --mesh DIR)');
  const seed = readSeed(key);
  const epochFlag = countFlag(ctx, 'epoch', 0);
  const timeoutMs = durationFlag(ctx, 'timeout', DEFAULT_TIMEOUT_MS);
  const diff = ctx.flags.diff === true;
  const nc = await connectControl(ctx);
  try {
    const [enrolments, records] = await Promise.all([readEnrolments(nc), readNodeRecords(nc)]);
    const nodes = resolveTargets(choice, (await enrolments).enrolled(), 'nothing was asked');
    if (fields.node !== undefined && (nodes.length !== 1 || nodes[0] !== fields.node)) throw refused(`${file} names the node ${JSON.stringify(fields.node)}: leave "node" out to plan one declaration for many nodes; nothing was asked`);
    // Checked once as every host will check it: a declaration no host would take is refused whole.
    await receiveDeclaration(Buffer.from(JSON.stringify({ ...fields, node: nodes[0], sequence: 1 })), { source: file });
    const ask = async (node: string): Promise<PlanLine> => {
      const copy = { ...fields, node };
      const made = await numberAndSign(copy, Buffer.from(JSON.stringify(copy)), file, node, records.get(node) ?? {}, epochFlag, seed);
      const request: PlanRequest = { envelope: JSON.parse(Buffer.from(made.bytes).toString('utf8')) as unknown, ...(diff ? { diff } : {}) };
      try {
        const reply = await nc.request(planSubject(node), JSON.stringify(request), { timeout: timeoutMs });
        return reply.json<PlanAnswer>();
      } catch (err) {
        return { node, outcome: 'no-answer', reason: (err as Error).message };
      }
    };
    const lines = await Promise.all(nodes.map(ask));
    ctx.print(ctx.json ? lines.map((l) => JSON.stringify(l)).join('\n') : formatFleetPlan(lines, `${timeoutMs / 1000}s`));
    return planExitCode(lines);
  } finally {
    await nc.close();
  }
}
