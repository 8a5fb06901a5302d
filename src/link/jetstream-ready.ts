import type { NatsConnection } from '@nats-io/transport-node';
import { refused } from '../system/errors.js';

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
  await askedWithin<void>(options, async (leftMs) => {
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
