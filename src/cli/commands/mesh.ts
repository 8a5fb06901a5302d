import type { NatsConnection } from '@nats-io/transport-node';
import { connectLink } from '../../link/connect.js';
import { ensureWire } from '../../link/control.js';
import { DECLARATIONS_BUCKET, REPORTS_STREAM, reportSubject, statusSubject } from '../../link/wire.js';
import { isEnvelope, sign } from '../../declaration/envelope.js';
import { readDeclarationFile, receiveDeclaration } from '../../declaration/load.js';
import { EXIT, refused, usageError } from '../../system/errors.js';
import { stringFlag, type CommandContext } from '../context.js';
import { readSeed } from './keys.js';
import { linkAuthFromFlags, serversFromFlag } from '../link-flags.js';
import { lazy } from '../../system/interop.js';

export async function connectControl(ctx: CommandContext): Promise<NatsConnection> {
  return connectLink({ servers: serversFromFlag(ctx.flags, 'nats://127.0.0.1:4222'), name: 'meshctl', persistent: false, ...linkAuthFromFlags(ctx.flags) }, ctx.log);
}

/**
 * `meshctl send NODE FILE [--key KEY]`: signs a plain declaration (its sequence set to the one after
 * the node's current value), or puts a signed envelope as it is, into the node's key.
 */
export async function sendCommand(ctx: CommandContext): Promise<number> {
  const [node, file] = ctx.args as [string, string];
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(node)) throw usageError(`'${node}' is not a node id`);
  const bytes = readDeclarationFile(file);
  const nc = await connectControl(ctx);
  try {
    await ensureWire(nc);
    const { Kvm } = await lazy(import('@nats-io/kv'));
    const kv = await new Kvm(nc).open(DECLARATIONS_BUCKET);
    let parsed: unknown;
    try {
      parsed = JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      throw refused(`${file}: not JSON: ${(err as Error).message}`);
    }
    let envelopeBytes: Uint8Array;
    let sequence: number;
    if (isEnvelope(parsed)) {
      envelopeBytes = bytes;
      sequence = (await receiveDeclaration(bytes, { source: file, node })).declaration.sequence;
    } else {
      const key = stringFlag(ctx.flags, 'key');
      if (!key) throw usageError("a plain declaration needs --key FILE to be signed");
      const current = await kv.get(node);
      let previous = 0;
      if (current?.operation === 'PUT') {
        try {
          const env = JSON.parse(new TextDecoder().decode(current.value)) as { payload: string };
          previous = (JSON.parse(Buffer.from(env.payload, 'base64').toString('utf8')) as { sequence?: number }).sequence ?? 0;
        } catch {
          previous = 0;
        }
      }
      const declaration = { ...(parsed as Record<string, unknown>), sequence: previous + 1 };
      const payload = Buffer.from(JSON.stringify(declaration));
      await receiveDeclaration(payload, { source: file, node });
      sequence = previous + 1;
      envelopeBytes = Buffer.from(JSON.stringify(await sign(payload, readSeed(key))));
    }
    const revision = await kv.put(node, envelopeBytes);
    ctx.print(ctx.json ? JSON.stringify({ node, sequence, revision }) : `sent to ${node}: sequence ${sequence} (revision ${revision})`);
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}

/** `meshctl reports [--follow] [--node NODE]`: reports as JSON lines, in the order the stream holds them. */
export async function reportsCommand(ctx: CommandContext): Promise<number> {
  const node = stringFlag(ctx.flags, 'node');
  const nc = await connectControl(ctx);
  try {
    await ensureWire(nc);
    const { jetstream, DeliverPolicy } = await lazy(import('@nats-io/jetstream'));
    const js = jetstream(nc);
    const consumer = await js.consumers.get(REPORTS_STREAM, { filter_subjects: node ? reportSubject(node) : 'mesh.report.>', deliver_policy: DeliverPolicy.All });
    const follow = ctx.flags.follow === true;
    if (!follow && (await consumer.info()).num_pending === 0) return EXIT.ok;
    const messages = await consumer.consume();
    // Following ends on Ctrl-C or SIGTERM, after the line being printed: a clean end, status 0.
    const end = () => void messages.close();
    const signals = ['SIGINT', 'SIGTERM'] as const;
    if (follow) for (const signal of signals) process.once(signal, end);
    try {
      for await (const m of messages) {
        ctx.print(m.string());
        if (!follow && m.info.pending === 0) break;
      }
    } finally {
      for (const signal of signals) process.off(signal, end);
    }
    void messages.close();
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}

/** `meshctl status NODE`: asks the host (request/reply, read-only); without a node, the fleet view. */
export async function statusCommand(ctx: CommandContext): Promise<number> {
  const node = ctx.args[0];
  if (node === undefined) return (await import('./fleet.js')).fleetCommand(ctx);
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
