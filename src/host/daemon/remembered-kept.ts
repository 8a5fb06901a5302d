import { createHash } from 'node:crypto';
import type { Delivery } from '../../../machines/lifecycle.js';
import type { HostConfig } from '../../core/config/config.js';
import type { Received } from '../../core/declaration/load.js';
import { KeptDeclaration } from '../env/kept-declaration.js';
import { writeDurablyAsync } from '../../core/system/durable.js';

type Trust = Pick<HostConfig, 'publicKey' | 'node'>;

const keyOf = (bytes: Uint8Array, config: Trust) => `${config.publicKey}|${config.node}|${createHash('sha256').update(bytes).digest('hex')}`;

/**
 * The declaration a delivery carries as the intake checked it (src/host/daemon/intake.ts). The machine
 * holds it opaque (it orders by the mark); only the intake puts one there, so what is read back is what it made.
 */
export function checkedOf(delivery: Delivery): Received | undefined {
  return delivery.checked as Received | undefined;
}

/**
 * The kept declaration as the daemon holds it, the one place its parsed declaration lives. The lifecycle
 * decides whether a delivery is kept (keepDelivered writes the bytes the intake checked durably); the
 * worker applies a delivery as the intake checked it, and opens the kept declaration for a reconcile.
 * Opening reads the bytes and takes their digest every time (the file could have been
 * changed since it was kept), but bytes already opened under the same pinned key and node are not
 * checked and parsed again: a 10,000-file declaration's signature check, parse and validation hold the
 * event loop a few hundred milliseconds on a loaded machine.
 */
export class RememberedKept extends KeptDeclaration {
  /** The kept declaration as last opened (or kept). */
  private opened: { key: string; received: Received } | undefined;
  /** A kept delivery whose bytes are not yet known on disk (being written, or a write that failed); keeps are written one after another. */
  private writing: { received: Received; revision: number } | undefined;
  private lastDurable: Promise<void> = Promise.resolve();
  private chain: Promise<void> = Promise.resolve();

  /**
   * The lifecycle kept this delivery: the bytes the intake verified (the delivery carries them, checked)
   * are written as the kept declaration, off the event loop, while the worker takes the lock and plans;
   * durable() is what the apply waits for before it touches the machine. Until the write ends, the kept
   * declaration is these bytes.
   */
  keepDelivered(delivery: Delivery, config: Trust): Received {
    const received = checkedOf(delivery);
    if (received === undefined || received.digest !== delivery.digest) throw new Error(`the delivery ${delivery.digest} to keep does not carry the declaration the intake checked`);
    this.writing = { received, revision: delivery.revision ?? 0 };
    void this.write(received, delivery.revision ?? 0).catch(() => undefined);
    if (config.publicKey) this.opened = { key: keyOf(received.bytes, config), received };
    return received;
  }

  /**
   * The declaration made durable and, beside it, the hint that names it (a hint ahead of the declaration
   * after a crash is harmless: a delivery counts as applied only when the store says so too, and a hint
   * lost costs a redundant apply). A declaration whose write fails stays `writing`, to be written again.
   */
  private write(received: Received, revision: number): Promise<void> {
    const written = this.chain.then(() => Promise.all([writeDurablyAsync(this.path, received.bytes, 0o600), this.noteRevisionAsync(revision, received.digest).catch(() => undefined)]));
    const durable = written.then(() => {
      if (this.writing?.received === received) this.writing = undefined;
    });
    this.lastDurable = durable;
    this.chain = durable.catch(() => undefined);
    return durable;
  }

  /**
   * Settles once the declaration kept last is on disk, durably. One whose write failed is written again
   * when an apply asks (the host holds it, the disk does not yet); rejects when that fails too.
   */
  override durable(): Promise<void> {
    return this.lastDurable.catch(() => (this.writing ? this.write(this.writing.received, this.writing.revision) : undefined));
  }

  override exists(): boolean {
    return this.writing !== undefined || super.exists();
  }

  /** How many resources the kept declaration holds, as last opened (what the next apply goes through). */
  resourcesKept(): number {
    return this.opened?.received.declaration.resources.length ?? 0;
  }

  override async receive(config: Trust): Promise<Received> {
    // Being written: the file will hold these very bytes, already checked under this key and node.
    const writing = this.writing?.received;
    if (writing && config.publicKey && this.opened?.received === writing && keyOf(writing.bytes, config) === this.opened.key) return writing;
    if (config.publicKey && this.opened && super.exists()) {
      const bytes = this.read();
      if (keyOf(bytes, config) === this.opened.key) return this.opened.received;
    }
    const received = await super.receive(config);
    if (config.publicKey) this.opened = { key: keyOf(received.bytes, config), received };
    return received;
  }
}
