import { compareOrder, type Mark } from '../declaration/order.js';
import type { Mode } from '../declaration/schema.js';
import type { Outcome, Report, Trigger } from '../report/report.js';
import { pauseAt, pauseText, type Pause } from '../../machines/pause.js';
import { deferredOf, deferredText } from './deferred.js';

/** The newest report of one node, as the reports stream holds it. */
export interface ReportSeen {
  node: string;
  /** Undefined when the stored bytes are not a report. */
  report?: Pick<Report, 'sequence' | 'trigger' | 'mode' | 'outcome' | 'error' | 'declaration' | 'finishedAt'> & { steps?: unknown };
  storedAtMs: number;
  /** What the report's signature check said; absent when no check was made. */
  signature?: SignatureVerdict;
}

/** What a report's signature says: verified; failed (forged, another key, another node); or unverified (unsigned, or its node enrolled no key yet). */
export type SignatureVerdict = { verdict: 'verified' } | { verdict: 'failed'; reason: string } | { verdict: 'unverified'; reason: string };

/** The newest heartbeat of one node, as the heartbeats stream holds it. */
export interface HeartbeatSeen {
  node: string;
  beat?: { reportSequence?: number; lastApplied?: Mark | null; uptimeSeconds?: number; intervalMs?: number; paused?: Pause | null };
  storedAtMs: number;
}

/** The value of one node's key: the newest declaration the mesh said. */
export interface KeySeen {
  node: string;
  /** Undefined when the value is not a readable envelope. */
  newest?: Mark;
}

/** Worst first: the order of the view and the meaning of the exit status. */
export const FLEET_STATES = ['failed', 'silent', 'paused', 'behind', 'waiting', 'converged'] as const;
export type FleetState = (typeof FLEET_STATES)[number];

export interface FleetRow {
  node: string;
  state: FleetState;
  mode: Mode | null;
  lastOutcome: { outcome: Outcome; trigger: Trigger; at: string; agoMs: number; resource?: string; message?: string } | null;
  lastApplied: Mark | null;
  newest: Mark | null;
  behind: boolean;
  reportSequence: number | null;
  heartbeat: { agoMs: number; intervalMs: number } | null;
  silent: boolean;
  /** The pause its newest heartbeat carries (one whose end has passed is none). */
  paused: Pause | null;
  signature?: SignatureVerdict['verdict'];
  /** Why the node is not converged and alive, one line each. */
  problems: string[];
}

/** A heartbeat every 30 s unless the beat says otherwise (the daemon's default). */
export const DEFAULT_HEARTBEAT_MS = 30_000;
/** A node is silent when its last heartbeat is older than this many of its intervals. */
export const SILENT_AFTER_INTERVALS = 3;

/** (epoch, sequence) order; a mark without an epoch is ordered by its sequence alone. */
export function isNewer(a: Mark, b: Mark): boolean {
  return compareOrder(a, b) > 0;
}

/**
 * The fleet, one row a node the mesh knows (it has a key, a report or a heartbeat), worst first:
 * failed (its last report failed or was refused, or its signature did not verify), silent (no heartbeat
 * for three intervals), paused (its heartbeat says it was paused by hand, and why), behind (the mesh said something newer than it applied), waiting (no report yet),
 * then converged; by node within each. Pure: what was read and the time, in; rows, out.
 */
export function fleetRows(input: { reports: ReportSeen[]; heartbeats: HeartbeatSeen[]; keys: KeySeen[]; nowMs: number }): FleetRow[] {
  const nodes = new Set([...input.reports, ...input.heartbeats, ...input.keys].map((x) => x.node));
  const byNode = <T extends { node: string }>(list: T[]) => new Map(list.map((x) => [x.node, x]));
  const reports = byNode(input.reports);
  const beats = byNode(input.heartbeats);
  const keys = byNode(input.keys);
  const rows = [...nodes].map((node) => rowOf(node, reports.get(node), beats.get(node), keys.get(node), input.nowMs));
  return rows.sort(fleetOrder);
}

/** The view's order: worst state first, by node within a state (the page sorts its rows with it too). */
export function fleetOrder(a: Pick<FleetRow, 'node' | 'state'>, b: Pick<FleetRow, 'node' | 'state'>): number {
  return FLEET_STATES.indexOf(a.state) - FLEET_STATES.indexOf(b.state) || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0);
}

function rowOf(node: string, seen: ReportSeen | undefined, beat: HeartbeatSeen | undefined, key: KeySeen | undefined, nowMs: number): FleetRow {
  const problems: string[] = [];
  const report = seen?.report;
  if (seen && !report) problems.push('its last report is not readable');
  if (seen?.signature?.verdict === 'failed') problems.push(`its last report's signature does not verify: ${seen.signature.reason}`);
  if (seen?.signature?.verdict === 'unverified') problems.push(`its last report is not verified: ${seen.signature.reason}`);

  const lastOutcome = report
    ? {
        outcome: report.outcome,
        trigger: report.trigger,
        at: report.finishedAt,
        agoMs: Math.max(0, nowMs - Date.parse(report.finishedAt)),
        ...(report.error?.resource ? { resource: report.error.resource } : {}),
        ...(report.error ? { message: report.error.message } : {}),
      }
    : null;
  if (report && report.outcome !== 'converged') {
    problems.push(`${report.outcome}${report.error ? `: ${report.error.resource ? `${report.error.resource}: ` : ''}${report.error.message}` : ''}`);
  }
  // Converged but for a restart its lock holds off: said, as what the host still has to do.
  if (report?.outcome === 'converged') problems.push(...deferredOf(report.steps).map(deferredText));

  const intervalMs = beat?.beat?.intervalMs ?? DEFAULT_HEARTBEAT_MS;
  const heartbeat = beat ? { agoMs: Math.max(0, nowMs - beat.storedAtMs), intervalMs } : null;
  // A host's first beat comes at a random point of its first interval: one that has not beaten yet is
  // silent only when it has not reported within three intervals either.
  const quietMs = heartbeat?.agoMs ?? (seen ? Math.max(0, nowMs - seen.storedAtMs) : Number.POSITIVE_INFINITY);
  const silent = quietMs > SILENT_AFTER_INTERVALS * intervalMs;
  if (silent) problems.push(heartbeat ? `silent: no heartbeat for ${formatAgo(heartbeat.agoMs)} (it beats every ${formatAgo(intervalMs)})` : 'silent: no heartbeat heard');

  // The heartbeat is the fresher word on what was applied when it knows of the newest report (or a later
  // one); a beat sent before the newest report names what came before it, so the report says it then.
  const beatFresher = beat?.beat !== undefined && (report === undefined || (beat.beat.reportSequence ?? -1) >= report.sequence);
  const fromReport = report?.declaration && report.outcome !== 'refused' ? report.declaration : null;
  const lastApplied = (beatFresher ? beat!.beat!.lastApplied : undefined) ?? fromReport ?? null;
  const newest = key?.newest ?? null;
  const behind = newest !== null && (lastApplied === null || (newest.digest !== lastApplied.digest && !isNewer(lastApplied, newest)));
  if (behind) problems.push(`behind: the mesh said ${markText(newest)}, it applied ${lastApplied ? markText(lastApplied) : 'nothing yet'}`);
  if (key && !newest) problems.push('its key does not hold a readable envelope');

  const failed = (report !== undefined && report.outcome !== 'converged') || (seen !== undefined && !report) || seen?.signature?.verdict === 'failed';
  // Paused by hand: it stands aside on purpose, so what it is behind is said but is not its state.
  const paused = pauseAt(beat?.beat?.paused, nowMs);
  if (paused) problems.unshift(pauseText(paused));
  const state: FleetState = failed ? 'failed' : silent ? 'silent' : paused ? 'paused' : behind ? 'behind' : report ? 'converged' : 'waiting';
  if (state === 'waiting') problems.push('no report yet');
  return {
    node,
    state,
    mode: report?.mode ?? null,
    lastOutcome,
    lastApplied,
    newest,
    behind,
    reportSequence: (beatFresher ? beat!.beat!.reportSequence : undefined) ?? report?.sequence ?? null,
    heartbeat,
    silent,
    paused,
    ...(seen?.signature ? { signature: seen.signature.verdict } : {}),
    problems,
  };
}

/**
 * What a monitoring check asks: no node failed, none silent, every one has reported. A node paused was
 * paused on purpose, with a reason, and is shown so without failing the check. A node behind is
 * shown but does not fail the check: right after a send every node is behind for the seconds its apply
 * takes, and one that stays behind while alive and converged is seen in the view.
 */
export function fleetHealthy(rows: FleetRow[]): boolean {
  return rows.every((r) => r.state === 'converged' || r.state === 'behind' || r.state === 'paused');
}

export function markText(mark: Pick<Mark, 'epoch' | 'sequence'>): string {
  return mark.epoch === undefined ? `${mark.sequence}` : `${mark.epoch}:${mark.sequence}`;
}

/** "300ms", "4s", "2m", "3h", "5d": how long, at a glance. */
export function formatAgo(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86_400)}d`;
}
