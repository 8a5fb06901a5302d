import type { NatsConnection } from '@nats-io/transport-node';
import type { KV, Kvm } from '@nats-io/kv';
import type { Logger } from '../core/system/log.js';
import { DECLARATIONS_BUCKET, declarationSubject, declaredSubject } from './wire.js';

export interface BucketWait {
  node: string;
  log: Logger;
  closed(): boolean;
  /** Waits, unless the link closes first. */
  pause(ms: number): Promise<void>;
}

/**
 * The control side creates the declarations bucket; until it exists the host waits, saying so. Its key
 * is read with a direct get, which names the key in the subject: the only read a host's credentials
 * allow (the bucket's status would list every node's key). A read of a bucket not yet made can hang
 * until its request times out (seconds): the first put to this node's key, heard on its subject, cuts
 * that wait short, so the first send to a host started before the mesh's buckets existed is applied at
 * once. Undefined when the link closed first.
 */
export async function openDeclarationsBucket(kvm: Kvm, nc: NatsConnection, wait: BucketWait): Promise<KV | undefined> {
  const { node, log } = wait;
  let wake = () => {};
  let heard = false;
  let opened: KV | undefined;
  const wakeSubs = [declarationSubject(node), declaredSubject(node)].map((subject) =>
    nc.subscribe(subject, {
      callback: (err) => {
        if (err || opened) return;
        heard = true;
        wake();
      },
    }),
  );
  const attempt = async (): Promise<{ kv: KV } | { err: Error }> => {
    try {
      const kv = await kvm.open(DECLARATIONS_BUCKET, { allow_direct: true });
      await kv.get(node);
      return { kv };
    } catch (err) {
      return { err: err as Error };
    }
  };
  try {
    for (let n = 0; !wait.closed() && !opened; n++) {
      const woken = new Promise<'woken'>((resolve) => (wake = () => resolve('woken')));
      const got = await Promise.race([attempt(), woken]);
      if (got === 'woken') continue;
      if ('kv' in got) {
        if (heard) log.info("link: the declarations bucket appeared (a put was heard on this node's key); reading it now");
        opened = got.kv;
        break;
      }
      if (n % 10 === 0) log.warn({ err: got.err.message }, `link: the bucket ${DECLARATIONS_BUCKET} is not there yet (or does not allow direct gets); waiting for the control side to create it`);
      await Promise.race([wait.pause(500), woken]);
    }
  } finally {
    for (const sub of wakeSubs) sub.unsubscribe();
  }
  return opened;
}
