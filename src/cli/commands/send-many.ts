import type { NatsConnection } from '@nats-io/transport-node';
import type { KV } from '@nats-io/kv';
import { isEnvelope } from '../../declaration/envelope.js';
import { readDeclarationFile, receiveDeclaration } from '../../declaration/load.js';
import { resolveTargets, type TargetChoice } from '../../fleet/targets.js';
import { readEnrolments } from '../../fleet/trust.js';
import type { Enrolments } from '../../link/enrolment.js';
import { archiveObjectProblems } from '../../archive/objects.js';
import { EXIT, HostError, refused, usageError } from '../../system/errors.js';
import { stringFlag, type CommandContext } from '../context.js';
import { readSeed } from './keys.js';
import { connectWire, countFlag } from './mesh.js';
import { checkPayloadSize, describeMark, nextMark, numberAndSign, openDeclarations, putNumbered, readNodeRecords, refuseUnlessNewer, type NodeRecord } from './numbering.js';
import type { Order } from '../../declaration/order.js';

/** What became of one node's copy. */
export type SendLine =
  | { node: string; outcome: 'sent'; mark: Order; revision: number }
  | { node: string; outcome: 'skipped'; reason: 'unchanged'; mark: Order }
  | { node: string; outcome: 'refused'; reason: string };

/** Copies signed and put at once: enough to keep a loaded server busy (64 left it waiting at a thousand nodes), few enough that it answers each in time. */
const IN_FLIGHT = 256;

/** The declaration with its sequence left out and its keys in one order: two copies that say the same thing compare equal. */
function sameDeclaration(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value) ? value.map(canonical) : value && typeof value === 'object' ? Object.fromEntries(Object.entries(value).filter(([k]) => k !== 'sequence').sort(([x], [y]) => (x < y ? -1 : 1)).map(([k, v]) => [k, canonical(v)])) : value;
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

/** A send that finds the node's key holding this very declaration (bar its number): nothing to put. */
class Unchanged extends Error {
  constructor(readonly mark: Order) {
    super('unchanged');
  }
}

/** The file as one plain declaration for many nodes: no envelope, no node of its own unless it is the only target, no sequence. */
export function fleetDeclaration(file: string, bytes: Buffer): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw refused(`${file}: not JSON: ${(err as Error).message}`);
  }
  if (isEnvelope(parsed)) throw refused(`${file} is signed already, for one node: send the plain declaration, and each node gets its own signed copy`);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw refused(`${file}: a declaration is a JSON object`);
  const fields = parsed as Record<string, unknown>;
  if (fields.sequence !== undefined) throw refused(`${file} declares a sequence: each node's copy is numbered after what that node holds, so leave it out`);
  return fields;
}

/**
 * `meshctl send FILE --nodes a,b | --select k=v | --all`: each node gets its own copy of the declaration
 * (its `node` set), numbered after what the mesh holds for that node, signed, and put with
 * compare-and-set. A node whose key already holds the same declaration is skipped. One line a node;
 * exit 0 when every send went (or had nothing to send), 1 when any was refused.
 */
export async function sendManyCommand(ctx: CommandContext, choice: TargetChoice, file: string): Promise<number> {
  const bytes = readDeclarationFile(file);
  const fields = fleetDeclaration(file, bytes);
  const key = stringFlag(ctx.flags, 'key');
  if (!key) throw usageError('a declaration is signed for each node: give --key FILE (or the mesh directory, --mesh DIR)');
  const seed = readSeed(key);
  const epochFlag = countFlag(ctx, 'epoch', 0);
  const nc = await connectWire(ctx);
  try {
    const { nodes, kv, records } = await prepareFleetSend(nc, choice, file, fields);
    const lines = await sendCopies({ nc, kv, file, fields, seed, epochFlag }, nodes, records);
    for (const line of lines) ctx.print(ctx.json ? JSON.stringify(line) : describeLine(line, nodes));
    if (!ctx.json) ctx.print(summaryOf(lines));
    return lines.every((l) => l.outcome !== 'refused') ? EXIT.ok : EXIT.failed;
  } finally {
    await nc.close();
  }
}

/**
 * What a send to many (and a rollout) checks before anything is sent: the nodes chosen, every one with a
 * key; a file naming a node only when it is the one target; every archive it names in the store; the
 * declaration as every host will check it. Any of these refuses the whole send.
 */
export async function prepareFleetSend(nc: NatsConnection, choice: TargetChoice, file: string, fields: Record<string, unknown>, enrolments = readEnrolments(nc)): Promise<{ nodes: string[]; kv: KV; records: Map<string, NodeRecord>; enrolments: Promise<Enrolments> }> {
  const [records, kv, missing] = await Promise.all([readNodeRecords(nc), openDeclarations(nc), archiveObjectProblems(nc, fields)]);
  const nodes = resolveTargets(choice, (await enrolments).enrolled());
  const named = fields.node;
  if (named !== undefined && (nodes.length !== 1 || nodes[0] !== named)) throw refused(`${file} names the node ${JSON.stringify(named)}: leave "node" out to send one declaration to many nodes; nothing was sent`);
  if (missing.length > 0) throw refused(`${file}: the archive store does not hold what it names; nothing was sent`, missing);
  // Checked once as every host will check it: a declaration no host would take is refused whole.
  await receiveDeclaration(Buffer.from(JSON.stringify({ ...fields, node: nodes[0], sequence: 1 })), { source: file });
  return { nodes, kv, records, enrolments };
}

export interface CopyContext {
  nc: NatsConnection;
  kv: KV;
  file: string;
  fields: Record<string, unknown>;
  seed: string;
  epochFlag: number | undefined;
}

/** Every node's copy, a bounded number at once; `again` names the nodes sent their copy even if their key holds it. */
export async function sendCopies(c: CopyContext, nodes: string[], records: Map<string, NodeRecord>, again: (node: string) => boolean = () => false): Promise<SendLine[]> {
  const lines: SendLine[] = new Array(nodes.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < nodes.length; i = next++) lines[i] = await sendCopy(c, nodes[i]!, records.get(nodes[i]!) ?? {}, again(nodes[i]!));
  };
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, nodes.length) }, lane));
  return lines;
}

/**
 * One node's copy: skipped when its key holds the same declaration (unless `again`: a rollout sends a
 * failed node its copy again after a fix), else numbered, signed and put; a refusal is that node's line.
 */
async function sendCopy(c: CopyContext, node: string, first: NodeRecord, again = false): Promise<SendLine> {
  const copy: Record<string, unknown> = { ...c.fields, node };
  try {
    const put = await putNumbered(c.nc, c.kv, node, async (record) => {
      const epoch = c.epochFlag ?? (typeof copy.epoch === 'number' ? copy.epoch : nextMark(record, undefined).epoch);
      const held = record.key?.declaration;
      if (!again && held && record.key?.mark && sameDeclaration(held, epoch === undefined ? copy : { ...copy, epoch })) throw new Unchanged(record.key.mark);
      const made = await numberAndSign(copy, Buffer.from(JSON.stringify(copy)), c.file, node, record, c.epochFlag, c.seed);
      refuseUnlessNewer(made.mark, record, c.file, node);
      checkPayloadSize(c.nc, made.bytes.length, `the signed declaration for ${node}`);
      return made;
    }, first);
    return { node, outcome: 'sent', mark: put.mark, revision: put.revision };
  } catch (err) {
    if (err instanceof Unchanged) return { node, outcome: 'skipped', reason: 'unchanged', mark: err.mark };
    if (err instanceof HostError) return { node, outcome: 'refused', reason: [err.message, ...err.details].join('; ') };
    return { node, outcome: 'refused', reason: (err as Error).message };
  }
}

function describeLine(line: SendLine, nodes: string[]): string {
  const width = Math.max(...nodes.map((n) => n.length));
  const node = line.node.padEnd(width);
  switch (line.outcome) {
    case 'sent':
      return `${node}  sent     ${describeMark(line.mark)} (revision ${line.revision})`;
    case 'skipped':
      return `${node}  skipped  unchanged: its key holds this declaration already (${describeMark(line.mark)})`;
    case 'refused':
      return `${node}  refused  ${line.reason}`;
  }
}

function summaryOf(lines: SendLine[]): string {
  const count = (o: SendLine['outcome']) => lines.filter((l) => l.outcome === o).length;
  const parts = [`${count('sent')} sent`, `${count('skipped')} skipped (unchanged)`, `${count('refused')} refused`];
  return `${lines.length} node${lines.length === 1 ? '' : 's'}: ${parts.join(', ')}`;
}
