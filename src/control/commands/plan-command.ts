import { enrolledCurveKeys, Sealer } from './sealing.js';
import { readDeclarationFile } from '../../core/declaration/load.js';
import { formatFleetPlan, planExitCode, type PlanLine } from '../fleet/plan-view.js';
import { resolveTargets } from '../fleet/targets.js';
import { readEnrolments } from '../fleet/trust.js';
import { planSubject } from '../../link/wire.js';
import type { PlanAnswer, PlanRequest } from '../../engine/report/report-preview.js';
import { HostError, refused, usageError } from '../../core/system/errors.js';
import type { NatsConnection } from '@nats-io/transport-node';
import { describeMissing, describeUsed, labelsOf, renderFor, usesValues, type Rendered } from '../fleet/node-values.js';
import { valuesFlag } from './values-flag.js';
import { durationFlag, stringFlag, type CommandContext } from '../../cli/context.js';
import { connectControl, listFlag } from '../../cli/link-flags.js';
import { targetFlags } from './target-flags.js';
import { readSeed } from './keys-command.js';
import { countFlag } from './mesh-flags.js';
import { numberAndSign, readNodeRecords, type NodeRecord } from './numbering.js';
import { meshDirOf, readMeshTrust, requireControlKey } from './mesh-trust.js';
import { cosign, type Envelope } from '../../core/declaration/envelope.js';
import { checkFleetCopy, fleetDeclaration } from './send-many.js';

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
  // Under a threshold above 1 the hosts answer only a copy signed by as many keys: --sign adds them.
  const others = listFlag(ctx.flags, 'sign').map((f) => ({ file: f, seed: readSeed(f) }));
  const epochFlag = countFlag(ctx, 'epoch', 0);
  const timeoutMs = durationFlag(ctx, 'timeout', DEFAULT_TIMEOUT_MS);
  const diff = ctx.flags.diff === true;
  const values = valuesFlag(ctx);
  const nc = await connectControl(ctx);
  try {
    const [enrolments, records, trust] = await Promise.all([readEnrolments(nc), readNodeRecords(nc), readMeshTrust(nc, meshDirOf(ctx))]);
    for (const k of [{ file: key, seed }, ...others]) requireControlKey(trust, k.file, k.seed);
    const enrolled = (await enrolments).enrolled();
    const nodes = resolveTargets(choice, enrolled, 'nothing was asked');
    if (fields.node !== undefined && (nodes.length !== 1 || nodes[0] !== fields.node)) throw refused(`${file} names the node ${JSON.stringify(fields.node)}: leave "node" out to plan one declaration for many nodes; nothing was asked`);
    const labels = labelsOf(enrolled);
    const rendered = new Map(nodes.map((node) => [node, usesValues(fields) ? renderFor(fields, node, labels(node), values) : undefined]));
    // Checked once as every host will check it: a declaration no host would take is refused whole (one
    // naming values, as rendered for the first node that has them all).
    const first = nodes.find((n) => !rendered.get(n)?.missing.length);
    if (first !== undefined) await checkFleetCopy(nc, file, rendered.get(first)?.declaration ?? fields, [first, ...nodes.filter((n) => n !== first)], 'nothing was asked');
    const sealer = new Sealer(seed, enrolledCurveKeys(async () => enrolments));
    const lines = await askPlans(nc, nodes, (node) => {
      const r = rendered.get(node);
      if (r?.missing.length) throw refused(describeMissing(node, r.missing));
      return r?.declaration ?? fields;
    }, { file, records, seed, cosigners: others.map((o) => o.seed), epochFlag, diff, timeoutMs, seal: (copy, node) => sealer.sealFor(copy, node, records.get(node)) });
    const used = diff ? nodes.flatMap((node) => (rendered.get(node)?.used.length ? [{ node, used: rendered.get(node)!.used }] : [])) : [];
    ctx.print(ctx.json ? lines.map((l) => JSON.stringify(withValues(l, used))).join('\n') : formatFleetPlan(lines, `${timeoutMs / 1000}s`, used.map((u) => ({ node: u.node, values: describeUsed(u.used) }))));
    return planExitCode(lines);
  } finally {
    await nc.close();
  }
}

/** A line under --json --diff: the values its node's copy used (a sensitive one never shown). */
function withValues(line: PlanLine, used: Array<{ node: string; used: Rendered['used'] }>): PlanLine {
  const mine = used.find((u) => u.node === line.node);
  return mine ? { ...line, values: mine.used.map((u) => ({ key: u.key, from: u.from, ...(u.sensitive ? { sensitive: true } : { value: u.value }) })) } as PlanLine : line;
}

export interface PlanAsk {
  file: string;
  records: Map<string, NodeRecord>;
  seed: string;
  /** The other control keys' seeds (--sign) each copy is signed by too: under a threshold above 1 a host answers no fewer. */
  cosigners?: string[];
  epochFlag: number | undefined;
  diff: boolean;
  timeoutMs: number;
  /** Seals a copy's sensitive values to the node (meshctl plan); none where nothing is sealed. */
  seal?: (copy: Record<string, unknown>, node: string) => Promise<Record<string, unknown>>;
}

/**
 * Asks every node at once for the plan it would make for its own copy (`copyOf`), numbered and signed
 * as a send would, put nowhere. A copy refused here (a value missing) is that node's refusal.
 */
export async function askPlans(nc: NatsConnection, nodes: string[], copyOf: (node: string) => Record<string, unknown>, o: PlanAsk): Promise<PlanLine[]> {
  const ask = async (node: string): Promise<PlanLine> => {
    let made;
    try {
      const rendered = { ...copyOf(node), node };
      // meshctl's own refusal comes before the node is asked: a value to seal for a node with no curve key.
      const copy = o.seal ? await o.seal(rendered, node) : rendered;
      made = await numberAndSign(copy, Buffer.from(JSON.stringify(copy)), o.file, node, o.records.get(node) ?? {}, o.epochFlag, o.seed);
    } catch (err) {
      if (err instanceof HostError) return { node, outcome: 'unsent', reason: [err.message, ...err.details].join('; ') };
      throw err;
    }
    const signed = (o.cosigners ?? []).reduce((e, other) => cosign(e, other), JSON.parse(Buffer.from(made.bytes).toString('utf8')) as Envelope);
    const request: PlanRequest = { envelope: signed, ...(o.diff ? { diff: o.diff } : {}) };
    try {
      const reply = await nc.request(planSubject(node), JSON.stringify(request), { timeout: o.timeoutMs });
      return reply.json<PlanAnswer>();
    } catch (err) {
      return { node, outcome: 'no-answer', reason: (err as Error).message };
    }
  };
  return Promise.all(nodes.map(ask));
}
