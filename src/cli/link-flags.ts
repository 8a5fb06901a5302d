import type { NatsConnection } from '@nats-io/transport-node';
import type { LinkAuth } from '../core/config/link-auth.js';
import { connectLink, type LinkSettings } from '../link/connect.js';
import { awaitJetStream } from '../link/jetstream-ready.js';
import type { Flags } from './args.js';
import { stringFlag, type CommandContext } from './context.js';

/** `--creds`, `--nkey`, `--tls-ca`, `--tls-cert`, `--tls-key`, as the NATS tools name them, for meshctl's own connection and for a bundle. */
export function linkAuthFromFlags(flags: Flags): LinkAuth {
  const creds = stringFlag(flags, 'creds');
  const nkeySeed = stringFlag(flags, 'nkey');
  const tls = { ca: stringFlag(flags, 'tls-ca'), cert: stringFlag(flags, 'tls-cert'), key: stringFlag(flags, 'tls-key') };
  const tlsGiven = Object.fromEntries(Object.entries(tls).filter(([, v]) => v !== undefined)) as NonNullable<LinkSettings['tls']>;
  return { ...(creds ? { creds } : {}), ...(nkeySeed ? { nkeySeed } : {}), ...(Object.keys(tlsGiven).length ? { tls: tlsGiven } : {}) };
}

/** The servers of `--server URL[,URL…]`. */
export function serversFromFlag(flags: Flags, fallback?: string): string[] {
  return (stringFlag(flags, 'server') ?? fallback ?? '').split(',').map((s) => s.trim()).filter(Boolean);
}

/**
 * meshctl's own connection, made from its flags: one attempt, no reconnecting, the local server by default;
 * returned once the mesh's JetStream answers (a cluster just started elects its leader first).
 */
export async function connectControl(ctx: CommandContext): Promise<NatsConnection> {
  const nc = await connectLink({ servers: serversFromFlag(ctx.flags, 'nats://127.0.0.1:4222'), name: 'meshctl', persistent: false, ...linkAuthFromFlags(ctx.flags) }, ctx.log);
  try {
    await awaitJetStream(nc);
  } catch (err) {
    await nc.close();
    throw err;
  }
  return nc;
}

/** A flag given once or more, each value perhaps comma-separated (`--host a --host b`, `--nodes a,b`): every value, in order. */
export function listFlag(flags: Flags, name: string): string[] {
  const value = flags[name];
  const given = Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
  return given.flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
}
