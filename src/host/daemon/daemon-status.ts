import { pauseAt, type BootReader, type Pause } from '../../../machines/pause.js';
import { keptFoundFirewalls } from '../../machine/filters/filter-kept.js';
import type { StoreState } from '../../core/store/state.js';
import type { SavedHead } from '../../core/store/peek.js';
import type { Mark } from '../../core/declaration/order.js';
import type { Fault } from '../../core/system/errors.js';

/**
 * What `meshctl status` is answered: the store's head as saved (read without the lock: it is renamed
 * whole), the newest declaration the host holds (kept: applied, or waiting to be), and the lifecycle's state.
 */
export function statusOf(saved: SavedHead | undefined, node: string, lifecycle: { state: unknown; kept: Mark | undefined; trust?: { version: number | undefined; refusal: string | undefined } }, nowMs: number, boot?: BootReader) {
  const state: SavedHead = saved ?? {};
  return {
    node,
    mode: state.mode ?? null,
    lastApplied: state.lastApplied ?? null,
    kept: lifecycle.kept ?? null,
    reportSequence: (state.reportSequence as number | undefined) ?? 0,
    lastOutcome: state.lastOutcome ?? null,
    held: state.held ?? [],
    refusals: state.refusals ?? {},
    // The head counts the records its journal holds (a store saved whole before holds them itself).
    footprint: state.journal?.records ?? Object.keys(state.records ?? {}).length,
    foundFirewall: keptFoundFirewalls(state as Pick<StoreState, 'foundFirewall'>),
    // The pause as it stands now: one whose end has passed is none, whether or not a save removed it yet.
    paused: pauseAt(state.pause as Pause | undefined, nowMs, boot),
    state: lifecycle.state,
    // The trust root version this host holds, and why the next one was refused when it was.
    trustVersion: lifecycle.trust?.version ?? null,
    ...(lifecycle.trust?.refusal ? { trustRefusal: lifecycle.trust.refusal } : {}),
  };
}

/**
 * The heartbeat: who, how far its reports have gone, what it applied and the newest it holds (a sender
 * numbers after both, even when the node's key and reports are gone from the mesh), how long it has
 * been up, its pause, the trust root version it holds (the fleet view names a host behind), and what
 * the system said when its state directory could not be written (null when it could).
 */
export function heartbeatOf(status: ReturnType<typeof statusOf>, uptimeMs: number, disk: Fault | null = null) {
  return { node: status.node, reportSequence: status.reportSequence, lastApplied: status.lastApplied, kept: status.kept, uptimeSeconds: Math.round(uptimeMs / 1000), paused: status.paused, trustVersion: status.trustVersion, disk };
}
