import { createHash } from 'node:crypto';
import type { HostConfig } from '../config/config.js';
import type { Received } from '../declaration/load.js';
import { KeptDeclaration } from '../host/kept.js';

const keyOf = (bytes: Uint8Array, config: Pick<HostConfig, 'publicKey' | 'node'>) => `${config.publicKey}|${config.node}|${createHash('sha256').update(bytes).digest('hex')}`;

/**
 * The kept declaration as the daemon opens it: the bytes are read and their digest taken every time
 * (the file could have been changed since it was kept), but bytes already opened under the same
 * pinned key and node are not checked and parsed again. A 10,000-file declaration's signature check,
 * parse and validation hold the event loop a few hundred milliseconds on a loaded machine; the watchers
 * open it after every apply, a reconcile before it applies, and a delivery was opened as it came in.
 */
export class RememberedKept extends KeptDeclaration {
  private opened: { key: string; received: Received } | undefined;

  /** A delivery checked by the intake, as it is kept: the same bytes need no second check. */
  remember(received: Received, config: Pick<HostConfig, 'publicKey' | 'node'>): void {
    if (config.publicKey) this.opened = { key: keyOf(received.bytes, config), received };
  }

  override async receive(config: Pick<HostConfig, 'publicKey' | 'node'>): Promise<Received> {
    if (config.publicKey && this.opened && this.exists()) {
      const bytes = this.read();
      if (keyOf(bytes, config) === this.opened.key) return this.opened.received;
    }
    const received = await super.receive(config);
    this.remember(received, config);
    return received;
  }
}
