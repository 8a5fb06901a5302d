import { errors, PermissionViolationError, type NatsConnection } from '@nats-io/transport-node';
import type { JetStreamManager, StreamInfo } from '@nats-io/jetstream';
import { refused } from '../core/system/errors.js';

/** JetStream's error when a cluster has no meta leader yet ("JetStream system temporarily unavailable"). */
const CLUSTER_NOT_AVAILABLE = 10008;

export interface ReadyOptions {
  /** How long a command waits for the cluster's JetStream before it gives up. */
  timeoutMs?: number;
  /** Each request's own bound: a server with no meta leader may not answer at all. */
  requestMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

/**
 * A cluster whose members have just started answers JetStream's API only once they have elected a meta
 * leader, a few seconds later (and a loaded machine takes longer). An operator who starts the servers
 * made by `meshctl init` and types the next command at once is waited for, within a bound, instead of
 * failing on a timeout from the first bucket's creation. Any answer other than "not yet" ends the wait:
 * what it means (JetStream off for the account, say) is for the command's own request to say.
 */
export async function awaitJetStream(nc: NatsConnection, options: ReadyOptions = {}): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const requestMs = options.requestMs ?? 2_000;
  // Credentials that may not ask JetStream at all (a host's, given to meshctl) are refused at once: the
  // server says so as the request goes out, and no wait would change it.
  const watch = watchDenied(nc, '$JS.API.');
  const deniedRefusal = watch.denied.then((subject) => {
    throw refused(
      `these credentials may not read the fleet: the server refuses them ${subject}, as it refuses a host's credentials (JetStream's API is the control side's)`,
      ["meshctl needs the mesh's own credentials: meshctl.creds in the mesh directory (--creds FILE, or --mesh DIR / MESH_DIR)"],
      'state',
    );
  });
  let over = false;
  try {
    await Promise.race([deniedRefusal, askJetStream(nc, options, timeoutMs, requestMs, () => over)]);
  } finally {
    // The asking ends too once refused: nothing is left waiting behind the refusal.
    over = true;
    watch.stop();
  }
}

/**
 * Watches the connection's status for the server's refusal to let this user publish to a subject starting
 * with `prefix`, or subscribe where answers come back; `denied` resolves with what was refused (and never
 * resolves otherwise).
 */
function watchDenied(nc: NatsConnection, prefix: string): { denied: Promise<string>; stop(): void } {
  const statuses = nc.status()[Symbol.asyncIterator]();
  let stopped = false;
  const denied = (async (): Promise<string> => {
    for (;;) {
      const next = await statuses.next();
      if (next.done || stopped) return new Promise<string>(() => undefined);
      const status = next.value;
      // The request's own publish, or the subscription its reply comes back on: either refused, it cannot be asked.
      if (status.type === 'error' && status.error instanceof PermissionViolationError) {
        const { operation, subject } = status.error;
        if (operation === 'publish' && subject.startsWith(prefix)) return `publishing to ${subject}`;
        if (operation === 'subscription') return `subscribing to ${subject} (where the answers come back)`;
      }
    }
  })();
  return {
    denied,
    stop: () => {
      stopped = true;
      void statuses.return?.();
    },
  };
}

async function askJetStream(nc: NatsConnection, options: ReadyOptions, timeoutMs: number, requestMs: number, over: () => boolean): Promise<void> {
  await askedWithin<void>(options, async (leftMs) => {
    if (over()) return { done: undefined };
    try {
      const reply = await nc.request('$JS.API.INFO', undefined, { timeout: Math.min(requestMs, Math.max(1, leftMs)) });
      const body = reply.json<{ error?: { err_code?: number; description?: string } }>();
      if (body.error?.err_code !== CLUSTER_NOT_AVAILABLE) return { done: undefined };
      return { again: body.error.description ?? 'JetStream system temporarily unavailable' };
    } catch (err) {
      return { again: (err as Error).message };
    }
  }, (last) => {
    throw refused(`the mesh's JetStream did not become ready within ${Math.round(timeoutMs / 1000)} s (${last}): are the cluster's servers all started and routed to each other?`);
  });
}

/**
 * Asks until the answer is final or the bound has passed (then `givenUp` says why, from the last answer):
 * the one loop behind waiting for a cluster's JetStream and making streams on a cluster still forming.
 */
async function askedWithin<T>(options: ReadyOptions, ask: (leftMs: number) => Promise<{ done: T } | { again: string }>, givenUp: (last: string) => never): Promise<T> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const now = options.now ?? Date.now;
  const deadline = now() + (options.timeoutMs ?? 30_000);
  let last = 'no answer';
  while (now() < deadline) {
    const answer = await ask(deadline - now());
    if ('done' in answer) return answer.done;
    last = answer.again;
    await sleep(250);
  }
  return givenUp(last);
}

/** JetStream's error when a stream asks for more replicas than the servers it knows of yet. */
const NO_PEERS_FOR_PLACEMENT = 10005;

/**
 * Makes a stream or bucket on a cluster that may still be forming: its meta leader can answer before it
 * has heard from every member, and a stream of three replicas is then refused with "no suitable peers
 * for placement" for a moment. That refusal, and "not yet", are asked again within the bound; any other
 * error is the command's to say.
 */
export async function whileClusterForms<T>(make: () => Promise<T>, options: ReadyOptions = {}): Promise<T> {
  let refusal: unknown;
  return askedWithin<T>(options, async () => {
    try {
      return { done: await make() };
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code !== NO_PEERS_FOR_PLACEMENT && code !== CLUSTER_NOT_AVAILABLE) throw err;
      refusal = err;
      return { again: (err as Error).message };
    }
  }, () => {
    throw refusal;
  });
}

/** JetStream's answer for a stream that does not exist. */
const STREAM_NOT_FOUND = 10059;

/**
 * A stream's information, or none when the server says it does not exist. A stream that does not answer
 * (its leader lost with its server, the cluster electing another) is asked again within the bound; any
 * other error is the command's to say.
 */
export async function streamInfoOrNone(jsm: JetStreamManager, name: string, options: ReadyOptions = {}): Promise<StreamInfo | undefined> {
  let last: unknown;
  return askedWithin<StreamInfo | undefined>(options, async () => {
    try {
      return { done: await jsm.streams.info(name) };
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code === STREAM_NOT_FOUND) return { done: undefined };
      if (!(err instanceof errors.TimeoutError) && code !== CLUSTER_NOT_AVAILABLE) throw err;
      last = err;
      return { again: (err as Error).message };
    }
  }, () => {
    throw last;
  });
}
