import type { NatsConnection } from '@nats-io/transport-node';
import { lazy } from '../../core/system/interop.js';

/**
 * NATS's own subject for an account JWT pushed to the servers' account resolvers (`resolver: { type:
 * full }`): published by a user of the system account, answered by every server that took it (the
 * servers of a cluster, and a site's leaf node through its system account's uplink).
 */
export const CLAIMS_UPDATE_SUBJECT = '$SYS.REQ.CLAIMS.UPDATE';

/** One server's answer to a push. */
export interface PushAnswer {
  server: string;
  ok: boolean;
  /** The server's own words ("jwt updated", or why not). */
  message: string;
}

export interface PushResult {
  answers: PushAnswer[];
  /** The servers expected that did not answer within the wait. */
  silent: string[];
}

interface ServerReply {
  server?: { name?: string };
  data?: { code?: number; message?: string };
  error?: { code?: number; description?: string };
}

/**
 * Pushes an account JWT to every server and gathers their answers: done when each of `expected` (the
 * servers' names) has answered, or when `waitMs` has passed, naming those that did not. A server that
 * answers with an error (an older JWT than it holds, a signature it does not trust) is said, with its
 * words; an answer from a server not expected is kept too.
 */
export async function pushAccountJwt(nc: NatsConnection, jwt: string, expected: string[], waitMs: number): Promise<PushResult> {
  const answers = new Map<string, PushAnswer>();
  const inbox = (await lazy(import('@nats-io/transport-node'))).createInbox();
  let settle: () => void = () => {};
  const allIn = new Promise<void>((resolve) => (settle = resolve));
  const sub = nc.subscribe(inbox, {
    callback: (err, message) => {
      if (err) return;
      const reply = parseReply(message.data);
      const server = reply.server?.name ?? '(unnamed server)';
      const ok = reply.error === undefined && (reply.data?.code ?? 200) < 300;
      answers.set(server, { server, ok, message: ok ? (reply.data?.message ?? 'updated') : (reply.error?.description ?? reply.data?.message ?? 'refused') });
      if (expected.every((name) => answers.has(name))) settle();
    },
  });
  const timer = setTimeout(settle, waitMs);
  try {
    await nc.flush();
    nc.publish(CLAIMS_UPDATE_SUBJECT, jwt, { reply: inbox });
    await allIn;
  } finally {
    clearTimeout(timer);
    sub.unsubscribe();
  }
  return { answers: [...answers.values()].sort((a, b) => (a.server < b.server ? -1 : 1)), silent: expected.filter((name) => !answers.has(name)) };
}

function parseReply(data: Uint8Array): ServerReply {
  try {
    return JSON.parse(new TextDecoder().decode(data)) as ServerReply;
  } catch {
    return { error: { description: 'an answer that is not JSON' } };
  }
}
