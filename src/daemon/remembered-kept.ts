import { createHash } from 'node:crypto';
import type { Delivery } from '../../machines/lifecycle.js';
import type { HostConfig } from '../config/config.js';
import type { Received } from '../declaration/load.js';
import { KeptDeclaration } from '../host/kept.js';

type Trust = Pick<HostConfig, 'publicKey' | 'node'>;

const keyOf = (bytes: Uint8Array, config: Trust) => `${config.publicKey}|${config.node}|${createHash('sha256').update(bytes).digest('hex')}`;

/**
 * The kept declaration as the daemon holds it, the one place its parsed declaration lives. The intake
 * remembers each delivery it verified here; the lifecycle decides whether it is kept (keepDelivered
 * writes those very bytes durably); the worker then opens the kept declaration, for a delivery and a
 * reconcile alike. Opening reads the bytes and takes their digest every time (the file could have been
 * changed since it was kept), but bytes already opened under the same pinned key and node are not
 * checked and parsed again: a 10,000-file declaration's signature check, parse and validation hold the
 * event loop a few hundred milliseconds on a loaded machine.
 */
export class RememberedKept extends KeptDeclaration {
  /** The kept declaration as last opened (or kept). */
  private opened: { key: string; received: Received } | undefined;
  /** The newest delivery the intake verified, not yet kept (the lifecycle may refuse it). */
  private delivered: Received | undefined;

  /** A delivery the intake verified: its bytes and parse wait here for the lifecycle's decision. */
  remember(received: Received): void {
    this.delivered = received;
  }

  /** The lifecycle kept this delivery: the bytes the intake verified are written as the kept declaration. */
  keepDelivered(delivery: Delivery, config: Trust): Received {
    const received = this.delivered;
    if (received === undefined || received.digest !== delivery.digest) throw new Error(`the delivery ${delivery.digest} to keep is not the one the intake verified last`);
    this.delivered = undefined;
    this.keep(received.bytes, delivery.revision ?? 0, received.digest);
    if (config.publicKey) this.opened = { key: keyOf(received.bytes, config), received };
    return received;
  }

  /** How many resources the kept declaration holds, as last opened (what the next apply goes through). */
  resourcesKept(): number {
    return this.opened?.received.declaration.resources.length ?? 0;
  }

  override async receive(config: Trust): Promise<Received> {
    if (config.publicKey && this.opened && this.exists()) {
      const bytes = this.read();
      if (keyOf(bytes, config) === this.opened.key) return this.opened.received;
    }
    const received = await super.receive(config);
    if (config.publicKey) this.opened = { key: keyOf(received.bytes, config), received };
    return received;
  }
}
