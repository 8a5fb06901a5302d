import type { NatsConnection } from '@nats-io/transport-node';
import { describeSetUp, ensureWire } from '../../link/control.js';
import type { JsMsg } from '@nats-io/jetstream';
import { Enrolments, signedReportOf } from '../../link/enrolment.js';
import { REPORTS_STREAM, nodeOfReportSubject, reportSubject, statusSubject } from '../../link/wire.js';
import { isEnvelope } from '../../declaration/envelope.js';
import { readDeclarationFile } from '../../declaration/load.js';
import { EXIT, refused, usageError } from '../../system/errors.js';
import { stringFlag, type CommandContext } from '../context.js';
import { listFlag } from '../link-flags.js';
import { readSeed } from './keys.js';
import { connectControl } from '../link-flags.js';
import { targetFlags } from '../target-flags.js';
import { lazy } from '../../system/interop.js';
import { asSigned, checkPayloadSize, describeMark, numberAndSign, openDeclarations, putNumbered, refuseUnlessNewer } from './numbering.js';
import { archiveObjectProblems } from '../../archive/objects.js';

/** `--NAME N`: a whole number at least `min`, or undefined when not given. */
export function countFlag(ctx: CommandContext, name: string, min: number): number | undefined {
  const text = stringFlag(ctx.flags, name);
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min) throw usageError(`--${name} ${text}: a whole number of at least ${min}`);
  return n;
}

/** A flag of ports (`--port 4222,4223`), each checked. */
export function portsFlag(ctx: CommandContext, name: string): number[] {
  return listFlag(ctx.flags, name).map((text) => {
    const n = Number(text);
    if (!/^\d+$/.test(text) || n < 1 || n > 65535) throw usageError(`--${name} ${text}: a port (1-65535)`);
    return n;
  });
}

/** Connects, creates the mesh's records when missing (replicas sized to the cluster), and says what it chose. */
export async function connectWire(ctx: CommandContext): Promise<NatsConnection> {
  const nc = await connectControl(ctx);
  try {
    const replicas = countFlag(ctx, 'replicas', 1);
    const setUp = await ensureWire(nc, replicas === undefined ? {} : { replicas });
    for (const line of describeSetUp(setUp)) ctx.log.warn(line);
    return nc;
  } catch (err) {
    await nc.close();
    throw err;
  }
}

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
    const kv = await openDeclarations(nc);
    // Hosts would fail an archive whose object is missing or differs: refused here, before it is sent.
    const missing = await archiveObjectProblems(nc, parsed);
    if (missing.length > 0) throw refused(`${file}: the archive store does not hold what it names; nothing was sent`, missing);
    const { revision, mark } = await putNumbered(nc, kv, node, async (record) => {
      const made = isEnvelope(parsed) ? await asSigned(bytes, file, node) : await numberAndSign(parsed, bytes, file, node, record, epochFlag, seed!);
      refuseUnlessNewer(made.mark, record, file, node);
      checkPayloadSize(nc, made.bytes.length, `the signed declaration for ${node}`);
      return made;
    });
    ctx.print(ctx.json ? JSON.stringify({ node, ...mark, revision }) : `sent to ${node}: ${describeMark(mark)} (revision ${revision})`);
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}

/** `meshctl reports [--follow] [--node NODE]`: reports as JSON lines, in the order the stream holds them. */
export async function reportsCommand(ctx: CommandContext): Promise<number> {
  const node = stringFlag(ctx.flags, 'node');
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
        lines.push(await withTrust(ctx, enrolments, m));
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
async function withTrust(ctx: CommandContext, enrolments: Enrolments, m: JsMsg): Promise<string> {
  const node = nodeOfReportSubject(m.subject);
  const trust = await enrolments.check(signedReportOf(node, m.data, m.headers));
  let report: unknown;
  try {
    report = m.json();
  } catch {
    report = { node, unreadable: m.string() };
  }
  if (trust.verdict !== 'verified') ctx.log.warn({ node, streamSequence: m.seq, trust }, `the report at stream sequence ${m.seq} on ${m.subject} is not verified: ${trust.verdict}`);
  return JSON.stringify({ ...(report as object), trust });
}

/** `meshctl status NODE`: asks the host (request/reply, read-only); without a node, the fleet view. */
export async function statusCommand(ctx: CommandContext): Promise<number> {
  const node = ctx.args[0];
  if (node === undefined) return (await import('./fleet.js')).fleetCommand(ctx);
  if (stringFlag(ctx.flags, 'select') !== undefined) throw usageError('status NODE asks one host: --select goes with the fleet view (status without NODE)');
  const nc = await connectControl(ctx);
  try {
    const reply = await nc.request(statusSubject(node), '', { timeout: 5000 });
    ctx.print(ctx.json ? reply.string() : JSON.stringify(JSON.parse(reply.string()), null, 2));
    return EXIT.ok;
  } catch (err) {
    throw refused(`${node} did not answer on ${statusSubject(node)}: ${(err as Error).message}`);
  } finally {
    await nc.close();
  }
}
