import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { KV } from '@nats-io/kv';
import type { Clock } from '../../core/system/clock.js';
import type { Logger } from '../../core/system/log.js';
import { openTrustBucket, readTrustVersion } from '../../link/trust-bucket.js';
import { TRUST_NOTICE_SUBJECTS, TRUST_SUBJECTS } from '../../link/wire.js';
import type { HeldTrust } from '../env/held-trust.js';

/** A notice at a site can come just before the site's copy holds the version: read again this often, this many times. */
const HEARD_AGAIN_MS = 250;
const HEARD_TRIES = 20;

export interface TrustFollowDeps {
  trust: () => HeldTrust;
  log: Logger;
  clock: Clock;
  /** The mesh's trust bucket is read again this often, because a notice of a put can be missed. */
  everyMs: number;
}

/**
 * Follows the mesh's trust root: reads the version after the one held, checks it against it, keeps it,
 * and goes on to the next until the mesh has no more; a host that was off for several versions walks
 * them in order. It reads when the link comes up, when a put to the bucket is heard, on a timer, and
 * when a delivery's signatures do not meet the version held (a rotation may have come first).
 * A version refused stops the walk: the host keeps the one it holds and says why, every time it reads.
 */
export class TrustFollow {
  private nc: NatsConnection | undefined;
  private kv: KV | undefined;
  private subs: Subscription[] = [];
  private walking: Promise<void> | undefined;
  private again = false;
  private timer: (() => void) | undefined;
  /** The last refusal said, so that a refused version is not logged on every read. */
  private lastRefusal: string | undefined;
  /** Why the next version was refused, for the status. */
  refusal: string | undefined;

  constructor(private readonly deps: TrustFollowDeps) {}

  /** The link is up on this connection: listen on it and catch up. */
  up(nc: NatsConnection): Promise<void> {
    if (this.nc !== nc) {
      for (const sub of this.subs) sub.unsubscribe();
      this.nc = nc;
      this.kv = undefined;
      // At the hub a put is heard itself; at a site, its notice once the version reached the site.
      this.subs = [TRUST_SUBJECTS, TRUST_NOTICE_SUBJECTS].map((subject) => nc.subscribe(subject, { callback: () => void this.heard(nc, 1) }));
    }
    if (!this.timer) {
      const tick = () => {
        this.timer = this.deps.clock.after(this.deps.everyMs, tick);
        void this.catchUp('timer');
      };
      this.timer = this.deps.clock.after(this.deps.everyMs, tick);
    }
    return this.catchUp('link up');
  }

  stop(): void {
    this.timer?.();
    this.timer = undefined;
    for (const sub of this.subs) sub.unsubscribe();
    this.subs = [];
    this.nc = undefined;
  }

  /** A put or its notice heard: walk, and read again shortly while the version held stays where it was. */
  private async heard(nc: NatsConnection, tries: number): Promise<void> {
    const before = this.deps.trust().version();
    await this.catchUp('put heard');
    if (this.deps.trust().version() !== before || tries >= HEARD_TRIES || this.nc !== nc || this.refusal) return;
    this.deps.clock.after(HEARD_AGAIN_MS, () => void this.heard(nc, tries + 1));
  }

  /** Walks the versions after the one held; a walk asked for while one runs runs once more after it. */
  catchUp(why: string): Promise<void> {
    if (this.walking) {
      this.again = true;
      return this.walking;
    }
    this.walking = this.walk(why)
      .catch((err: Error) => this.deps.log.warn({ err: err.message }, 'trust: the mesh\'s trust root could not be read; the version held stays in force'))
      .finally(() => {
        this.walking = undefined;
        if (this.again) {
          this.again = false;
          void this.catchUp(why);
        }
      });
    return this.walking;
  }

  private async walk(why: string): Promise<void> {
    const nc = this.nc;
    if (!nc || nc.isClosed()) return;
    this.kv ??= await openTrustBucket(nc);
    if (!this.kv) return;
    const trust = this.deps.trust();
    for (;;) {
      const held = trust.version();
      if (held === undefined) return;
      const bytes = await readTrustVersion(this.kv, held + 1);
      if (!bytes) return;
      const followed = trust.follow(bytes);
      if (!followed.ok) {
        this.refusal = `trust version ${held + 1} refused: ${followed.reason}`;
        if (this.refusal !== this.lastRefusal) this.deps.log.error({ held }, `trust: ${this.refusal}; the host keeps version ${held}`);
        this.lastRefusal = this.refusal;
        return;
      }
      this.refusal = undefined;
      this.deps.log.info({ version: followed.version, why }, `trust: followed the mesh's trust root to version ${followed.version}`);
    }
  }
}
