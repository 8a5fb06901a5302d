import { orderConflict, type HeldMark, type Mark } from '../src/core/declaration/order.js';
import type { PauseOrder } from './pause.js';
import type { Delivery, LifecycleContext, LoadedStore, Pending, ReportRef, Work } from './lifecycle-types.js';

/* What the lifecycle decides its queue and its outbox with: pure functions of its context. */

/**
 * Work given back by a worker that found the host paused, with what became pending meanwhile: a newer
 * delivery stays; else the delivery given back; else one reconcile with everything found.
 */
export function givenBack(pending: Pending | undefined, back: Work | undefined): Pending | undefined {
  if (back === undefined || back.kind === 'refusals' || pending?.kind === 'delivery') return pending;
  if (back.kind === 'delivery' || pending === undefined) return back;
  const found = [...(back.found ?? []), ...(pending.found ?? []).filter((f) => !back.found?.includes(f))];
  return { kind: 'reconcile', ...(found.length > 0 ? { found } : {}) };
}

/** The pause set in the context, from an order (the store's, a command's, a worker's). */
export const pauseFrom = (order: PauseOrder) => ({ pause: order.pause, pauseEndsInMs: order.endsInMs });

/** A delivery as the worker will apply it, when it is one. */
const deliveryOf = (p: Work | undefined): Delivery | undefined => (p?.kind === 'delivery' ? p.delivery : undefined);

/** Everything a delivery is ordered against: what was applied, what is kept, and the queue. */
function heldMarks(context: LifecycleContext): Array<HeldMark | undefined> {
  const held = (what: string, mark: Mark | undefined) => (mark ? { what, mark } : undefined);
  return [
    held('the last applied', context.applied),
    held('the kept declaration', context.kept),
    held('the delivery being applied', deliveryOf(context.inFlight)),
    held('the pending delivery', deliveryOf(context.pending)),
  ];
}

/** Why a delivery is refused by the order rule, or undefined when it may be kept and applied. */
export function deliveryRefusal(context: LifecycleContext, delivery: Delivery): string | undefined {
  return orderConflict(delivery, heldMarks(context));
}

/**
 * A report told ready joins the end of the outbox. The outbox's watch is the one teller and tells each
 * report once, oldest first, so a report is always newer than those queued and sent; one that is not
 * would leave out of order, and is not queued.
 */
export function queued(context: LifecycleContext, report: ReportRef): ReportRef[] {
  const newest = Math.max(context.sentThrough, context.outbox.at(-1)?.sequence ?? 0);
  return report.sequence > newest ? [...context.outbox, { sequence: report.sequence }] : context.outbox;
}

/**
 * What waits after a start: the last apply failed (a genesis' whose fault was put right, a full disk
 * since freed), so one reconcile tries it again, saying why; a delivery pending converges it anyway.
 */
export function retriedAtStart(pending: Pending | undefined, loaded: LoadedStore): Pending | undefined {
  if (loaded.lastFailed === undefined || pending?.kind === 'delivery') return pending;
  const why = `the last apply (report ${loaded.lastFailed.report}) failed${loaded.lastFailed.message ? `: ${loaded.lastFailed.message}` : ''}; it is tried again as the host starts`;
  return { kind: 'reconcile', found: [...(pending?.found ?? []), why] };
}
