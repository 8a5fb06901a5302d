import { pauseAt, type Pause } from '../../machines/pause.js';
import { keptFoundFirewalls } from '../firewall/kept.js';
import type { StoreState } from '../store/state.js';
import type { SavedHead } from '../store/peek.js';
import type { Mark } from '../declaration/order.js';

/**
 * What `meshctl status` is answered: the store's head as saved (read without the lock: it is renamed
 * whole), the newest declaration the host holds (kept: applied, or waiting to be), and the lifecycle's state.
 */
export function statusOf(saved: SavedHead | undefined, node: string, lifecycle: { state: unknown; kept: Mark | undefined }, nowMs: number) {
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
    paused: pauseAt(state.pause as Pause | undefined, nowMs),
    state: lifecycle.state,
  };
}

/**
 * The heartbeat: who, how far its reports have gone, what it applied and the newest it holds (a sender
 * numbers after both, even when the node's key and reports are gone from the mesh), how long it has
 * been up, and its pause.
 */
export function heartbeatOf(status: ReturnType<typeof statusOf>, uptimeMs: number) {
  return { node: status.node, reportSequence: status.reportSequence, lastApplied: status.lastApplied, kept: status.kept, uptimeSeconds: Math.round(uptimeMs / 1000), paused: status.paused };
}
