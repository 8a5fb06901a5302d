import { describeOrder, epochIn } from '../../core/declaration/order.js';
import { enrolledCurveKeys, Sealer } from './sealing.js';
import type { NatsConnection } from '@nats-io/transport-node';
import type { KV } from '@nats-io/kv';
import { isEnvelope } from '../../core/declaration/envelope.js';
import { parseJsonText } from '../../core/declaration/json-syntax.js';
import { meshDirOf, newestOf, requireControlKey, syncTrust } from './mesh-trust.js';
import { propose, signOnce } from './propose.js';
import { readDeclarationFile, receiveDeclaration } from '../../core/declaration/load.js';
import { resolveTargets, type TargetChoice } from '../fleet/targets.js';
import { readEnrolments } from '../fleet/trust.js';
import type { Enrolments } from '../../link/enrolment.js';
import { archiveObjectProblems } from '../../kinds/archive/objects.js';
import { EXIT, HostError, refused, usageError } from '../../core/system/errors.js';
import { stringFlag, type CommandContext } from '../../cli/context.js';
import { readSeed } from './keys-command.js';
import { connectWire, countFlag } from './mesh-flags.js';
import { checkPayloadSize, envelopeBytes, nextMark, numberAndSign, openDeclarations, putNumbered, putSigned, readNodeRecords, refuseUnlessNewer, sameDeclaration, type NodeRecord } from './numbering.js';
import type { Order } from '../../core/declaration/order.js';
import { inLanes } from '../fleet/lanes.js';
import type { SignedCopy } from '../fleet/rollout.js';
import { copyMaker, EMPTY_VALUES, labelsOf, type NodeValues } from '../fleet/node-values.js';
import { valuesFlag } from './values-flag.js';

/** What became of one node's copy. */
export type SendLine =
  | { node: string; outcome: 'sent'; mark: Order; revision: number }
  | { node: string; outcome: 'skipped'; reason: 'unchanged'; mark: Order }
  | { node: string; outcome: 'refused'; reason: string };

/** Copies signed and put at once: enough to keep a loaded server busy (64 left it waiting at a thousand nodes), few enough that it answers each in time. */
const IN_FLIGHT = 256;


/** A send that finds the node's key holding this very declaration (bar its number): nothing to put. */
class Unchanged extends Error {
  constructor(readonly mark: Order) {
    super('unchanged');
  }
}

/** The file as one plain declaration for many nodes: no envelope, no node of its own unless it is the only target, no sequence. */
export function fleetDeclaration(file: string, bytes: Buffer): Record<string, unknown> {
  const json = parseJsonText(bytes.toString('utf8'));
  if (!json.ok) throw refused(`${file}: not JSON: ${json.message}`);
  const parsed = json.value;
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
    const trust = await syncTrust(nc, meshDirOf(ctx));
    requireControlKey(trust, key, seed);
    const { nodes, kv, records, copyOf, enrolments } = await prepareFleetSend(nc, choice, file, fields, readEnrolments(nc), valuesFlag(ctx));
    const sealer = new Sealer(seed, enrolledCurveKeys(() => enrolments));
    if (trust && newestOf(trust).control.threshold > 1) {
      // Signed once, each node's copy (with its values, sealed) numbered after what the mesh holds for it; delivered together on approval.
      const once = { file, copyOf, records, epochFlag, seed, sealer };
      const copies = [];
      for (const node of nodes) copies.push(await signOnce(once, node));
      return await propose(ctx, nc, trust, file, key, copies);
    }
    const lines = await sendCopies({ nc, kv, file, fields, copyOf, seed, epochFlag, sealer }, nodes, records);
    for (const line of lines) ctx.print(ctx.json ? JSON.stringify(line) : describeSendLine(line, nodes));
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
export async function prepareFleetSend(nc: NatsConnection, choice: TargetChoice, file: string, fields: Record<string, unknown>, enrolments = readEnrolments(nc), values: NodeValues = EMPTY_VALUES): Promise<{ nodes: string[]; kv: KV; records: Map<string, NodeRecord>; enrolments: Promise<Enrolments>; copyOf: (node: string) => Record<string, unknown> }> {
  const [records, kv, missing] = await Promise.all([readNodeRecords(nc), openDeclarations(nc), archiveObjectProblems(nc, fields)]);
  const enrolled = (await enrolments).enrolled();
  const nodes = resolveTargets(choice, enrolled);
  const named = fields.node;
  if (named !== undefined && (nodes.length !== 1 || nodes[0] !== named)) throw refused(`${file} names the node ${JSON.stringify(named)}: leave "node" out to send one declaration to many nodes; nothing was sent`);
  if (missing.length > 0) throw refused(`${file}: the archive store does not hold what it names; nothing was sent`, missing);
  const copyOf = copyMaker(fields, values, labelsOf(enrolled));
  // Checked once as every host will check it: a declaration no host would take is refused whole. One
  // that names values is checked as rendered for the first node that has them all (a node lacking one
  // is refused on its own line).
  const first = firstRendered(nodes, copyOf);
  if (first) await checkFleetCopy(nc, file, first.copy, [first.node, ...nodes.filter((n) => n !== first.node)]);
  return { nodes, kv, records, enrolments, copyOf };
}

/** The first node whose copy renders, and its copy. */
function firstRendered(nodes: string[], copyOf: (node: string) => Record<string, unknown>): { node: string; copy: Record<string, unknown> } | undefined {
  for (const node of nodes) {
    try {
      return { node, copy: copyOf(node) };
    } catch (err) {
      if (!(err instanceof HostError)) throw err;
    }
  }
  return undefined;
}

/**
 * Checked once, before any node is sent or asked anything, as every host will check it: a declaration no
 * host would take is refused whole, and so is one whose signed copy the servers could not carry (sized
 * for the longest node name and a ten-digit sequence: no copy is larger).
 */
export async function checkFleetCopy(nc: NatsConnection, file: string, fields: Record<string, unknown>, nodes: string[], nothing = 'nothing was sent'): Promise<void> {
  await receiveDeclaration(Buffer.from(JSON.stringify({ ...fields, node: nodes[0], sequence: 1 })), { source: file });
  const longest = nodes.reduce((a, b) => (b.length > a.length ? b : a), '');
  const largest = Buffer.byteLength(JSON.stringify({ ...fields, node: longest, epoch: epochIn(fields) ?? 0, sequence: 9_999_999_999 }));
  checkPayloadSize(nc, envelopeBytes(largest), `${file}, each node's copy signed,`, nothing);
}

export interface CopyContext {
  nc: NatsConnection;
  kv: KV;
  file: string;
  fields: Record<string, unknown>;
  /** Each node's own declaration (rendered with its values, or the one a rollback puts back): `fields` for every node when not given. A refusal is that node's. */
  copyOf?: (node: string) => Record<string, unknown>;
  seed: string;
  epochFlag: number | undefined;
  /** Seals each copy's sensitive values to its node's curve key before it is signed. */
  sealer: Sealer;
  /** Each node's copy signed already (a rollout approved under a threshold above 1): put as it is, nothing signed here. */
  signed?: Record<string, SignedCopy>;
}

/** Every node's copy, a bounded number at once; `again` names the nodes sent their copy even if their key holds it. */
export async function sendCopies(c: CopyContext, nodes: string[], records: Map<string, NodeRecord>, again: (node: string) => boolean = () => false): Promise<SendLine[]> {
  return inLanes(nodes, IN_FLIGHT, (node) => sendCopy(c, node, records.get(node) ?? {}, again(node)));
}

/**
 * One node's copy: skipped when its key holds the same declaration (unless `again`: a rollout sends a
 * failed node its copy again after a fix), else numbered, signed and put; a refusal is that node's line.
 */
async function sendCopy(c: CopyContext, node: string, first: NodeRecord, again = false): Promise<SendLine> {
  try {
    const signed = c.signed?.[node];
    if (signed && 'unchanged' in signed) return { node, outcome: 'skipped', reason: 'unchanged', mark: signed.unchanged };
    if (signed) {
      const put = await putSigned(c.nc, c.kv, node, signed, c.file, first);
      return { node, outcome: 'sent', mark: put.mark, revision: put.revision };
    }
    if (c.signed) throw refused(`no signed copy for ${node} in the approved rollout: it is not sent (approve it again after meshctl rollout --resume)`);
    const copy: Record<string, unknown> = { ...(c.copyOf ? c.copyOf(node) : c.fields), node };
    const put = await putNumbered(c.nc, c.kv, node, async (record) => {
      const epoch = c.epochFlag ?? (epochIn(copy) ?? nextMark(record, undefined).epoch);
      const held = record.key?.declaration;
      const sealed = await c.sealer.sealFor(copy, node, record);
      if (!again && held && record.key?.mark && sameDeclaration(held, epoch === undefined ? sealed : { ...sealed, epoch })) throw new Unchanged(record.key.mark);
      const made = await numberAndSign(sealed, Buffer.from(JSON.stringify(sealed)), c.file, node, record, c.epochFlag, c.seed);
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

export function describeSendLine(line: SendLine, nodes: string[]): string {
  const width = Math.max(...nodes.map((n) => n.length));
  const node = line.node.padEnd(width);
  switch (line.outcome) {
    case 'sent':
      return `${node}  sent     ${describeOrder(line.mark)} (revision ${line.revision})`;
    case 'skipped':
      return `${node}  skipped  unchanged: its key holds this declaration already (${describeOrder(line.mark)})`;
    case 'refused':
      return `${node}  refused  ${line.reason}`;
  }
}

export function summaryOf(lines: SendLine[]): string {
  const count = (o: SendLine['outcome']) => lines.filter((l) => l.outcome === o).length;
  const parts = [`${count('sent')} sent`, `${count('skipped')} skipped (unchanged)`, `${count('refused')} refused`];
  return `${lines.length} node${lines.length === 1 ? '' : 's'}: ${parts.join(', ')}`;
}
