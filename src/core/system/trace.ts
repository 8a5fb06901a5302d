import { channel } from 'node:diagnostics_channel';

/**
 * The steps of a delivery's way through the daemon, from the notice of a put to the report's removal
 * from the outbox once acknowledged, in the order they happen.
 */
export type DeliveryStep =
  | 'notice'
  | 'read'
  | 'got'
  | 'verified'
  | 'kept'
  | 'worker'
  | 'locked'
  | 'source'
  | 'planned'
  | 'applied'
  | 'reported'
  | 'outboxed'
  | 'committed'
  | 'saved'
  | 'unlocked'
  | 'done'
  | 'sending'
  | 'signed'
  | 'acknowledged'
  | 'removed';

/** What a listener hears at each step: its name and when (performance.timeOrigin + performance.now()). */
export interface DeliveryMark {
  step: DeliveryStep;
  at: number;
}

/**
 * The delivery's marks go to a diagnostics channel, which costs one property read while nobody listens
 * (the daemon as shipped). The link benchmark loads a listener into the daemon to tell where the time
 * of a delivery goes; nothing in the host listens.
 */
const delivery = channel('mesh-host:delivery');

export function markStep(step: DeliveryStep): void {
  if (delivery.hasSubscribers) delivery.publish({ step, at: performance.timeOrigin + performance.now() } satisfies DeliveryMark);
}
