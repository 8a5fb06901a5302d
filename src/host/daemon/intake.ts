import type { LifecycleEvent } from '../../../machines/lifecycle.js';
import type { HostConfig } from '../../core/config/config.js';
import { receiveDeclaration, type Received } from '../../core/declaration/load.js';
import { markOf } from '../../core/declaration/order.js';
import type { DeclarationValue } from '../../link/session.js';
import { HostError, refused } from '../../core/system/errors.js';
import type { Logger } from '../../core/system/log.js';
import { markStep } from '../../core/system/trace.js';
import type { SignerRule } from '../../core/declaration/envelope.js';

export interface IntakeDeps {
  config: () => HostConfig;
  log: Logger;
  /** What a delivery must be signed by: the newest trust root version held; undefined when nothing is pinned. */
  rule: () => SignerRule | undefined;
  /** Reads the mesh's newer trust root versions, if any, and follows them. */
  catchUpTrust: () => Promise<void>;
  /**
   * The running lifecycle, told each delivery as DELIVERY (its mark and its checked declaration, to order,
   * keep and enqueue) or REFUSED (a value that cannot be a declaration for this host, which the worker
   * reports); undefined before it runs.
   */
  lifecycle(): { send(event: LifecycleEvent): void } | undefined;
}

/**
 * Delivery intake: each value of this node's key is checked (signature first, then the vocabulary and
 * the node) one at a time, in the order the link brought them, and handed to the lifecycle with its mark.
 * Whether it is newer than what the host holds, and so kept and applied, is the lifecycle's decision,
 * not the intake's; the intake reports nothing itself.
 */
export class DeliveryIntake {
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly deps: IntakeDeps) {}

  /** The link's handler of a value, handed to it as it is: a delivery goes from the link to here, and no closure between. */
  readonly take = (value: DeclarationValue): void => {
    this.chain = this.chain.then(() => this.check(value)).catch((err: Error) => this.deps.log.error({ err }, 'link: a delivery could not be handled'));
  };

  /**
   * Checked against the trust root held. A delivery its signatures do not satisfy may be signed by the
   * keys of a newer version the host has not read yet (the rotation, then the send): the host reads the
   * mesh's trust root and checks once more before refusing. A refusal of a kind is handed on as data.
   */
  private async check({ bytes, revision }: DeclarationValue): Promise<void> {
    const source = `the delivery (revision ${revision})`;
    const node = this.deps.config().node;
    const receive = async () => {
      const rule = this.deps.rule();
      // Without a pinned key nothing the link brings can be trusted: refused before it is read.
      if (!rule) throw refused(`${source}: no control-plane key is pinned; refused`, [], 'forged');
      return receiveDeclaration(Buffer.from(bytes), { source, node, requireSignature: true, rule });
    };
    let received: Received;
    try {
      received = await receive().catch(async (err: unknown) => {
        if (!(err instanceof HostError) || !['forged', 'retired', 'unapproved'].includes(err.kind ?? '')) throw err;
        const before = this.deps.rule()?.version;
        await this.deps.catchUpTrust();
        if (this.deps.rule()?.version === before) throw err;
        return receive();
      });
    } catch (err) {
      if (!(err instanceof HostError) || err.kind === undefined) throw err;
      return this.deps.lifecycle()?.send({ type: 'REFUSED', refused: { kind: err.kind, message: [err.message, ...err.details].join('; ') } });
    }
    markStep('verified');
    this.deps.lifecycle()?.send({ type: 'DELIVERY', delivery: { ...markOf(received.declaration, received.digest), revision, checked: received } });
  }
}
