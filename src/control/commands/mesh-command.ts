import { describeOrder } from '../../core/declaration/order.js';
import { enrolledCurveKeys, Sealer } from './sealing.js';
import type { JsMsg } from '@nats-io/jetstream';
import { Enrolments } from '../../link/enrolment.js';
import { signedReportOf } from '../../link/signed-report.js';
import { REPORTS_STREAM, nodeOfReportSubject, reportSubject, statusSubject } from '../../link/wire.js';
import { isEnvelope, type Envelope } from '../../core/declaration/envelope.js';
import { readDeclarationFile } from '../../core/declaration/load.js';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import { stringFlag, type CommandContext } from '../../cli/context.js';
import { readSeed } from './keys-command.js';
import { connectControl } from '../../cli/link-flags.js';
import { targetFlags } from './target-flags.js';
import { connectWire, countFlag } from './mesh-flags.js';
import { lazy } from '../../core/system/interop.js';
import { asSigned, checkPayloadSize, numberAndSign, openDeclarations, putNumbered, readNodeRecord, refuseUnlessNewer, type NodeRecord } from './numbering.js';
import { archiveObjectProblems } from '../../kinds/archive/objects.js';
import type { NatsConnection } from '@nats-io/transport-node';
import { copyMaker, labelsOf, usesValues, type NodeValues } from '../fleet/node-values.js';
import { readEnrolments } from '../fleet/trust.js';
import { valuesFlag } from './values-flag.js';
import { readable, reportFilterFlags } from './output-flags.js';
import { reportLines, reportMatches, type ReportSeenAs } from '../fleet/report-lines.js';
import { hostStatusLines, type HostStatusSeen } from '../fleet/host-status-lines.js';
import { meshDirOf, newestOf, requireControlKey, syncTrust } from './mesh-trust.js';
import { propose } from './propose.js';

/**
 * `meshctl send NODE FILE [--key KEY] [--epoch N]`: puts a declaration into the node's key. A plain
 * declaration keeps the sequence it declares (refused unless newer than the key's) or, naming none,
 * gets the one after the newest of the key and the node's latest report; it is then signed. An
 * envelope is put as it is, if newer. The put is a compare-and-set on the revision read: two senders
 * at once never take the same number. With --nodes, --select or --all and the FILE alone, it goes to
 * many nodes (send-many.ts).
 */
export async function sendCommand(ctx: CommandContext): Promise<number> {
  const choice = targetFlags(ctx);
  if (ctx.args.length === 1) {
    if (!choice) throw usageError("'send' needs NODE FILE, or FILE with --nodes, --select or --all");
    return (await import('./send-many.js')).sendManyCommand(ctx, choice, ctx.args[0]!);
  }
  if (choice) throw usageError('send NODE FILE names its node: --nodes, --select and --all go with FILE alone');
  const [node, file] = ctx.args as [string, string];
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(node)) throw usageError(`'${node}' is not a node id`);
  const bytes = readDeclarationFile(file);
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw refused(`${file}: not JSON: ${(err as Error).message}`);
  }
  const epochFlag = countFlag(ctx, 'epoch', 0);
  const key = stringFlag(ctx.flags, 'key');
  const seed = isEnvelope(parsed) ? undefined : key ? readSeed(key) : undefined;
  if (!isEnvelope(parsed) && !seed) throw usageError('a plain declaration needs --key FILE to be signed');
  if (isEnvelope(parsed) && epochFlag !== undefined) throw usageError(`${file} is signed already: its epoch cannot be changed (--epoch); send the plain declaration`);
  const nc = await connectWire(ctx);
  try {
    const trust = await syncTrust(nc, meshDirOf(ctx));
    if (seed) requireControlKey(trust, key!, seed);
    const kv = await openDeclarations(nc);
    // A declaration that names per-node values is rendered for this node before it is signed.
    const [plain, plainBytes] = isEnvelope(parsed) || !usesValues(parsed) ? [parsed, bytes] : await renderedForOne(nc, node, parsed as Record<string, unknown>, valuesFlag(ctx));
    // Hosts would fail an archive whose object is missing or differs: refused here, before it is sent.
    const missing = await archiveObjectProblems(nc, parsed);
    if (missing.length > 0) throw refused(`${file}: the archive store does not hold what it names; nothing was sent`, missing);
    let enrolments: Promise<Enrolments> | undefined;
    const sealer = seed ? new Sealer(seed, enrolledCurveKeys(() => (enrolments ??= Enrolments.open(nc)))) : undefined;
    // The copy for this node: an envelope as it is; a plain one with its values, sealed, numbered after what the mesh holds, signed.
    const make = async (record: NodeRecord) => {
      if (isEnvelope(parsed)) return asSigned(bytes, file, node);
      // The file's own bytes (or its copy with the node's values) are signed as they are unless a value had to be sealed.
      const sealed = await sealer!.sealFor(plain as Record<string, unknown>, node, record);
      return numberAndSign(sealed, sealed === plain ? plainBytes : Buffer.from(JSON.stringify(sealed)), file, node, record, epochFlag, seed!);
    };
    if (trust && newestOf(trust).control.threshold > 1) {
      const record = await readNodeRecord(nc, kv, node);
      const made = await make(record);
      refuseUnlessNewer(made.mark, record, file, node);
      const envelope = JSON.parse(Buffer.from(made.bytes).toString('utf8')) as Envelope;
      return await propose(ctx, nc, trust, file, key ?? file, [{ node, envelope, mark: made.mark }]);
    }
    const { revision, mark } = await putNumbered(nc, kv, node, async (record) => {
      const made = await make(record);
      refuseUnlessNewer(made.mark, record, file, node);
      checkPayloadSize(nc, made.bytes.length, `the signed declaration for ${node}`);
      return made;
    });
    ctx.print(ctx.json ? JSON.stringify({ node, ...mark, revision }) : `sent to ${node}: ${describeOrder(mark)} (revision ${revision})`);
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}

/** The declaration rendered with the node's values (its labels as the mesh holds them), as its bytes too. */
async function renderedForOne(nc: NatsConnection, node: string, fields: Record<string, unknown>, values: NodeValues): Promise<[Record<string, unknown>, Buffer]> {
  const enrolled = (await readEnrolments(nc)).enrolled();
  const rendered = copyMaker(fields, values, labelsOf(enrolled))(node);
  return [rendered, Buffer.from(JSON.stringify(rendered))];
}

/**
 * `meshctl reports [--follow] [--node NODE] [--since T] [--until T] [--outcome O] [--resource R]`: reports in
 * the order the stream holds them, as lines a person reads on a terminal (or with --text), as JSON lines
 * under --json and into a pipe.
 */
export async function reportsCommand(ctx: CommandContext): Promise<number> {
  const node = stringFlag(ctx.flags, 'node');
  const filter = reportFilterFlags(ctx);
  const people = readable(ctx);
  const nc = await connectWire(ctx);
  try {
    const { jetstream, DeliverPolicy } = await lazy(import('@nats-io/jetstream'));
    const follow = ctx.flags.follow === true;
    // The consumer and the enrolments are asked for at once: over a fleet, every node's enrolment in
    // one read rather than one read a node.
    const [consumer, enrolments] = await Promise.all([
      jetstream(nc).consumers.get(REPORTS_STREAM, { filter_subjects: node ? reportSubject(node) : 'mesh.report.>', deliver_policy: DeliverPolicy.All }),
      Enrolments.open(nc).then(async (opened) => {
        if (!node) await opened.readAll();
        return opened;
      }),
    ]);
    // Without --follow, the reports stored when the read began: a fleet that keeps reporting never lets
    // "nothing pending" come.
    const held = follow ? Infinity : (await consumer.info()).num_pending;
    if (held === 0) return EXIT.ok;
    const messages = await consumer.consume({ max_messages: 1000 });
    // Following ends on Ctrl-C or SIGTERM, after the line being printed: a clean end, status 0.
    const end = () => void messages.close();
    const signals = ['SIGINT', 'SIGTERM'] as const;
    if (follow) for (const signal of signals) process.once(signal, end);
    // Lines are written together while more are waiting, and at once when the last one came: one
    // write a line cost a tenth of the time over a thousand reports.
    let lines: string[] = [];
    const flush = () => {
      if (lines.length) ctx.print(lines.join('\n'));
      lines = [];
    };
    let read = 0;
    try {
      for await (const m of messages) {
        const report = await withTrust(ctx, enrolments, m);
        if (reportMatches(report, filter)) lines.push(people ? reportLines(report, filter).join('\n') : JSON.stringify(report));
        const last = ++read >= held || (!follow && m.info.pending === 0);
        if (last || m.info.pending === 0 || lines.length >= 500) flush();
        if (last) break;
      }
    } finally {
      flush();
      for (const signal of signals) process.off(signal, end);
    }
    void messages.close();
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}

/**
 * A report as printed: its JSON with `trust` added (what its signature and its node's enrolled key say).
 * One that is not verified is also said on stderr, so that a forged report is never read as the host's.
 */
async function withTrust(ctx: CommandContext, enrolments: Enrolments, m: JsMsg): Promise<ReportSeenAs> {
  const node = nodeOfReportSubject(m.subject);
  const trust = await enrolments.check(signedReportOf(node, m.data, m.headers));
  let report: unknown;
  try {
    report = m.json();
  } catch {
    report = { node, unreadable: m.string() };
  }
  if (trust.verdict !== 'verified') ctx.log.warn({ node, streamSequence: m.seq, trust }, `the report at stream sequence ${m.seq} on ${m.subject} is not verified: ${trust.verdict}`);
  return { ...(report as object), trust } as ReportSeenAs;
}

/** `meshctl status NODE`: asks the host (request/reply, read-only); without a node, the fleet view. */
export async function statusCommand(ctx: CommandContext): Promise<number> {
  const node = ctx.args[0];
  if (node === undefined) return (await import('./fleet-command.js')).fleetCommand(ctx);
  if (stringFlag(ctx.flags, 'select') !== undefined) throw usageError('status NODE asks one host: --select goes with the fleet view (status without NODE)');
  const nc = await connectControl(ctx);
  try {
    const reply = await nc.request(statusSubject(node), '', { timeout: 5000 });
    // A terminal reads lines; a pipe keeps the JSON it always had (indented; one line under --json).
    ctx.print(ctx.json ? reply.string() : readable(ctx) ? hostStatusLines(JSON.parse(reply.string()) as HostStatusSeen).join('\n') : JSON.stringify(JSON.parse(reply.string()), null, 2));
    return EXIT.ok;
  } catch (err) {
    throw refused(`${node} did not answer on ${statusSubject(node)}: ${(err as Error).message}`);
  } finally {
    await nc.close();
  }
}
