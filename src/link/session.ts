import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { KV } from '@nats-io/kv';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { Clock } from '../core/system/clock.js';
import type { Logger } from '../core/system/log.js';
import { connectLink, type LinkSettings } from './connect.js';
import { declarationSubject, declaredSubject, heartbeatSubject, hostInboxPrefix, inventorySubject, planSubject, reportMessageId, reportSubject, statusSubject } from './wire.js';
import type { ReportSigner } from './report-trust.js';
import { HeardReads } from './notices.js';
import { openDeclarationsBucket } from './bucket-wait.js';
import { lazy } from '../core/system/interop.js';
import { markStep } from '../core/system/trace.js';

export interface DeclarationValue {
  bytes: Uint8Array;
  revision: number;
}

export interface LinkHandlers {
  /** A value of this node's key: read when a put is heard, on open, on reconnect and on the timer. */
  onDeclaration(value: DeclarationValue): void;
  onUp(): void;
  onDown(): void;
  status(): Promise<unknown>;
  inventory(): Promise<unknown>;
  /** The plan this host would make for a request's signed declaration; `limit` is the largest answer the server takes. */
  plan?(request: Uint8Array, limit: number): Promise<unknown>;
  heartbeat(): unknown;
}

export interface LinkOptions {
  settings: LinkSettings;
  node: string;
  log: Logger;
  /** Every wait and the heartbeat's jitter go through it. */
  clock: Clock;
  /** The key is read again this often, because a notice of a put can be missed (a disconnect, a lost route). */
  rereadMs?: number;
  heartbeatMs?: number;
  /** Signs every report at publish, over the exact bytes sent; without one, reports go unsigned (and are flagged). */
  signer?: ReportSigner;
}

/**
 * The link, hiding the NATS client behind a small surface: the machine never sees a
 * NATS type. It listens for puts to this node's key and reads the key when one is heard, on every
 * reconnect and on a timer; answers status, inventory and plans (read-only), sends a heartbeat, and publishes
 * reports with their message id. It carries no actions.
 *
 * Hearing a put is a plain subscription to the key's own subject, not a KV watch: a watch is a
 * JetStream consumer on the server for every host (created through the cluster's meta leader, beating
 * every 5 s, re-created on every reconnect), which at ten thousand hosts costs the servers more than
 * everything else the fleet does; a subscription is only interest, and the client restores it itself.
 */
export class LinkSession {
  private nc?: NatsConnection;
  private kv?: KV;
  private js?: JetStreamClient;
  private closed = false;
  /** Cancels of the live timers only: each leaves the set when it fires, so a long-lived link holds a handful. */
  private timers = new Set<() => void>();
  private subs: Subscription[] = [];
  private lastRevision = 0;
  private lastServerError = { message: '', at: 0 };
  private readonly heard = new HeardReads({ read: () => this.reread('put heard'), revision: () => this.lastRevision, pause: (ms) => this.pause(ms), closed: () => this.closed });

  constructor(private readonly options: LinkOptions, private readonly handlers: LinkHandlers) {}

  /** The live connection, for what reads over the link besides declarations (archives); undefined until it opens. */
  get connection(): NatsConnection | undefined {
    return this.nc;
  }

  async open(): Promise<void> {
    const { log, node } = this.options;
    // The client waits for servers by itself; what stops it here is a credential that cannot be
    // read, which an operator may yet put right: said, and tried again.
    for (let attempt = 0; !this.nc && !this.closed; attempt++) {
      try {
        this.nc = await connectLink({ inboxPrefix: hostInboxPrefix(node), ...this.options.settings }, log);
      } catch (err) {
        if (attempt % 6 === 0) log.error({ err: (err as Error).message }, 'link: cannot connect; trying again every 10 s');
        await this.pause(10_000);
      }
    }
    if (!this.nc) return;
    if (this.closed) return void (await this.nc.close());
    const [{ Kvm }, { jetstream }] = await Promise.all([lazy(import('@nats-io/kv')), lazy(import('@nats-io/jetstream'))]);
    this.js = jetstream(this.nc);
    void this.followStatus();
    this.answer(statusSubject(node), () => this.handlers.status());
    this.answer(inventorySubject(node), () => this.handlers.inventory());
    const plan = this.handlers.plan?.bind(this.handlers);
    if (plan) this.answer(planSubject(node), (data) => plan(data, this.nc?.info?.max_payload ?? 1 << 20));
    this.startHeartbeat();
    this.kv = await openDeclarationsBucket(new Kvm(this.nc), this.nc, { node, log, closed: () => this.closed, pause: (ms) => this.pause(ms) });
    if (this.closed || !this.kv) return;
    this.handlers.onUp();
    // Listening first, then reading: a put between the two is heard, one before is read.
    this.listenForPuts();
    const every = this.options.rereadMs ?? 60_000;
    const reread = () => {
      void this.reread('timer');
      this.later(every, reread);
    };
    this.later(every, reread);
    await this.reread('open');
  }

  private later(ms: number, fn: () => void): void {
    const cancel = this.options.clock.after(ms, () => {
      this.timers.delete(cancel);
      fn();
    });
    this.timers.add(cancel);
  }

  /** Waits, unless the link closes first (close cancels the timer; the wait then ends with it). */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const cancel = this.options.clock.after(ms, () => {
        this.timers.delete(stop);
        resolve();
      });
      const stop = () => {
        cancel();
        resolve();
      };
      this.timers.add(stop);
    });
  }

  /**
   * Every put to this node's key is also delivered to whoever listens on its subject; behind a site's
   * leaf node that message stays at the hub, and the leaf announces the put on the node's notice subject
   * as the put reaches the site. What is heard is only a notice: the value applied is the one read back
   * with its revision, which orders it.
   */
  private listenForPuts(): void {
    for (const subject of [declarationSubject(this.options.node), declaredSubject(this.options.node)]) {
      this.subs.push(this.nc!.subscribe(subject, { callback: this.heard.message }));
    }
  }

  private async reread(why: string): Promise<boolean> {
    if (!this.kv || this.closed) return false;
    try {
      markStep('read');
      const entry = await this.kv.get(this.options.node);
      markStep('got');
      // Only a newer revision is handed on, and straight to the handler (the daemon's intake).
      if (entry && entry.operation === 'PUT' && entry.revision > this.lastRevision) {
        this.lastRevision = entry.revision;
        this.handlers.onDeclaration({ bytes: entry.value, revision: entry.revision });
      }
      return true;
    } catch (err) {
      this.options.log.warn({ err: (err as Error).message, why }, 'link: could not read the key');
      return false;
    }
  }

  /** After a reconnect the bucket may need a moment (a new stream leader): read until it answers. */
  private async rereadUntilRead(why: string): Promise<void> {
    for (let attempt = 0; attempt < 60 && !this.closed; attempt++) {
      if (await this.reread(why)) return;
      await this.pause(1000);
    }
  }

  private async followStatus(): Promise<void> {
    for await (const status of this.nc!.status()) {
      if (this.closed) break;
      if (status.type === 'disconnect') {
        this.options.log.warn({ server: status.server }, 'link: disconnected; reconnecting');
        this.handlers.onDown();
      } else if (status.type === 'error') {
        // The server's own words: a revoked or refused user is told so here, before the disconnect;
        // said again only when the words change or a minute has passed, as it is refused at each try.
        const now = Date.now();
        if (status.error.message !== this.lastServerError.message || now - this.lastServerError.at > 60_000) {
          this.lastServerError = { message: status.error.message, at: now };
          this.options.log.warn({ err: status.error.message }, 'link: the server said an error');
        }
      } else if (status.type === 'reconnect') {
        this.options.log.info({ server: status.server }, 'link: reconnected; reading the key again');
        this.handlers.onUp();
        void this.rereadUntilRead('reconnect');
      }
    }
  }

  private answer(subject: string, reply: (data: Uint8Array) => Promise<unknown>): void {
    const sub = this.nc!.subscribe(subject, {
      callback: (err, msg) => {
        if (err) return;
        reply(msg.data).then(
          (value) => msg.respond(JSON.stringify(value)),
          (e: Error) => msg.respond(JSON.stringify({ error: e.message })),
        );
      },
    });
    this.subs.push(sub);
  }

  /** One heartbeat now (a change the fleet should see before the next beat); the timer's go on as before. */
  beatNow(): void {
    if (this.closed || !this.nc) return;
    try {
      // The interval travels with the beat: the fleet view calls a node silent after three of its own.
      // The curve key rides along: a host that made one at its start is known by it within a beat.
      const sealing = this.options.signer?.sealing;
      this.nc.publish(heartbeatSubject(this.options.node), JSON.stringify({ ...(this.handlers.heartbeat() as object), intervalMs: this.options.heartbeatMs ?? 30_000, ...(sealing ? { sealing } : {}) }));
    } catch {
      // disconnected: the next beat will do
    }
  }

  private startHeartbeat(): void {
    const every = this.options.heartbeatMs ?? 30_000;
    const beat = () => {
      if (this.closed || !this.nc) return;
      this.beatNow();
      this.later(every, beat);
    };
    // One beat at connect, so that the fleet sees a connected host at once; then a random first delay,
    // so that a fleet restarted together does not beat in step.
    this.beatNow();
    this.later(Math.floor(this.options.clock.random() * every), beat);
  }

  /** Publishes one report and waits for the stream's acknowledgement; retries reuse the message id. */
  async publishReport(sequence: number, bytes: Uint8Array): Promise<{ duplicate: boolean }> {
    if (!this.js) throw new Error('the link is not connected');
    // Signed here, over the very bytes sent: whatever the outbox holds is what the signature covers.
    const { headers } = await lazy(import('@nats-io/transport-node'));
    const signature = headers();
    for (const [name, value] of Object.entries(this.options.signer?.headersFor(bytes) ?? {})) signature.set(name, value);
    markStep('signed');
    const ack = await this.js.publish(reportSubject(this.options.node), bytes, { msgID: reportMessageId(this.options.node, sequence), timeout: 5000, headers: signature });
    markStep('acknowledged');
    return { duplicate: ack.duplicate };
  }

  /** The largest message the connected server takes (its max_payload), once connected. */
  get maxPayload(): number | undefined {
    return this.nc?.info?.max_payload;
  }

  get connected(): boolean {
    return this.js !== undefined && !this.closed && !this.nc?.isClosed();
  }

  async close(): Promise<void> {
    this.closed = true;
    const cancels = [...this.timers];
    this.timers.clear();
    for (const cancel of cancels) cancel();
    for (const s of this.subs) s.unsubscribe();
    try {
      await this.nc?.close();
    } catch {
      // closing anyway
    }
  }
}
