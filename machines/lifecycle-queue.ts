import { orderConflict, type HeldMark, type Mark } from '../src/declaration/order.js';
import type { PauseOrder } from './pause.js';
import type { Delivery, LifecycleContext, Pending, ReportRef, Work } from './lifecycle-types.js';

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

/** Reports merged into the outbox: in sequence order, each once, none the mesh already acknowledged. */
export function withReports(context: LifecycleContext, reports: readonly ReportRef[]): ReportRef[] {
  const known = new Set(context.outbox.map((r) => r.sequence));
  const fresh: ReportRef[] = [];
  for (const r of reports) {
    if (r.sequence <= context.sentThrough || known.has(r.sequence)) continue;
    known.add(r.sequence);
    fresh.push({ sequence: r.sequence });
  }
  if (fresh.length === 0) return context.outbox;
  // The report being sent stays first: what is found later is never sent ahead of it.
  const [head, ...rest] = context.outbox;
  const sorted = [...rest, ...fresh].sort((a, b) => a.sequence - b.sequence);
  return head ? [head, ...sorted] : sorted;
}
