import { compareOrder, describeOrder, type Mark } from '../../core/declaration/order.js';
import type { Mode } from '../../core/declaration/schema.js';
import type { Outcome, Report, Trigger } from '../../engine/report/report.js';
import { pauseAt, pauseText, type Pause } from '../../../machines/pause.js';
import { deferredOf, deferredText } from './deferred.js';
import { isDiskFull, type Fault } from '../../core/system/errors.js';

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
  beat?: { reportSequence?: number; lastApplied?: Mark | null; uptimeSeconds?: number; intervalMs?: number; paused?: Pause | null; trustVersion?: number | null; disk?: Fault | null };
  storedAtMs: number;
  /**
   * How long ago it was heard, measured on a monotonic clock by a listener that heard it (the page's
   * feed): no step of a wall clock makes a node silent or keeps it from being so. Absent, the age is
   * the view's now less storedAtMs (a one-off read: both are the server's and the view's wall clocks).
   */
  agoMs?: number;
}

/** The value of one node's key: the newest declaration the mesh said. */
export interface KeySeen {
  node: string;
  /** Undefined when the value is not a readable envelope. */
  newest?: Mark;
}

/**
 * Worst first: the order of the view and the meaning of the exit status. `removed`: taken out of the
 * mesh (`meshctl node-remove`), its credentials revoked; what it said before stays readable.
 */
export const FLEET_STATES = ['failed', 'silent', 'paused', 'behind', 'waiting', 'converged', 'removed'] as const;
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
  /** The trust root version its heartbeat says it holds; null when it does not say. */
  trustVersion: number | null;
  /** It holds an older trust root version than the mesh's newest. */
  trustBehind: boolean;
  /** What the system said when the node's state directory could not be written, as its newest heartbeat says (null: it could). */
  disk: Fault | null;
  /** Why the node is not converged and alive, one line each. */
  problems: string[];
  /** When it was taken out of the mesh, when it was. */
  removedAt?: string;
}

/** A node taken out of the mesh: when. */
export interface RemovalSeen {
  node: string;
  at: string;
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
export function fleetRows(input: { reports: ReportSeen[]; heartbeats: HeartbeatSeen[]; keys: KeySeen[]; removed?: RemovalSeen[]; nowMs: number; enrolled?: string[]; trustVersion?: number }): FleetRow[] {
  const removed = input.removed ?? [];
  // A node with a pinned key (enrolled) is one the mesh knows, even before it has said or been sent anything.
  const nodes = new Set([...[...input.reports, ...input.heartbeats, ...input.keys, ...removed].map((x) => x.node), ...(input.enrolled ?? [])]);
  const byNode = <T extends { node: string }>(list: T[]) => new Map(list.map((x) => [x.node, x]));
  const reports = byNode(input.reports);
  const beats = byNode(input.heartbeats);
  const keys = byNode(input.keys);
  const removals = byNode(removed);
  const rows = [...nodes].map((node) => {
    const removal = removals.get(node);
    const row = withTrust(rowOf(node, reports.get(node), beats.get(node), keys.get(node), input.nowMs), beats.get(node), input.trustVersion);
    return removal ? removedRow(row, removal) : row;
  });
  return rows.sort(fleetOrder);
}

/** A removed node says so and nothing else: its silence and its last outcome are what removal means. */
function removedRow(row: FleetRow, removal: RemovalSeen): FleetRow {
  return { ...row, state: 'removed', silent: false, behind: false, removedAt: removal.at, problems: [`removed from the mesh at ${removal.at}: its credentials are revoked`] };
}

/**
 * The trust root version the host holds, and whether it is behind the mesh's newest (a host that says
 * none is of a release before trust roots: `meshctl trust show` lists it). Said as a problem; the node's state stays.
 */
function withTrust(row: Omit<FleetRow, 'trustVersion' | 'trustBehind'>, beat: HeartbeatSeen | undefined, meshVersion: number | undefined): FleetRow {
  const held = typeof beat?.beat?.trustVersion === 'number' ? beat.beat.trustVersion : null;
  const trustBehind = meshVersion !== undefined && held !== null && held < meshVersion;
  if (trustBehind) row.problems.push(`trust: it holds version ${held}, the mesh is at version ${meshVersion}: it has not followed the rotation`);
  return { ...row, trustVersion: held, trustBehind };
}

/** The view's order: worst state first, by node within a state (the page sorts its rows with it too). */
export function fleetOrder(a: Pick<FleetRow, 'node' | 'state'>, b: Pick<FleetRow, 'node' | 'state'>): number {
  return FLEET_STATES.indexOf(a.state) - FLEET_STATES.indexOf(b.state) || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0);
}

function rowOf(node: string, seen: ReportSeen | undefined, beat: HeartbeatSeen | undefined, key: KeySeen | undefined, nowMs: number): Omit<FleetRow, 'trustVersion' | 'trustBehind'> {
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
  const heartbeat = beat ? { agoMs: beat.agoMs ?? Math.max(0, nowMs - beat.storedAtMs), intervalMs } : null;
  // A host's first beat comes at a random point of its first interval: one that has not beaten yet is
  // silent only when it has not reported within three intervals either.
  // A node never heard from at all (no report, no heartbeat) is waiting for its first word, not silent.
  const neverHeard = !seen && !beat;
  const quietMs = heartbeat?.agoMs ?? (seen ? Math.max(0, nowMs - seen.storedAtMs) : Number.POSITIVE_INFINITY);
  const silent = !neverHeard && quietMs > SILENT_AFTER_INTERVALS * intervalMs;
  if (silent) problems.push(heartbeat ? `silent: no heartbeat for ${formatAgo(heartbeat.agoMs)} (it beats every ${formatAgo(intervalMs)})` : 'silent: no heartbeat heard');

  // The heartbeat is the fresher word on what was applied when it knows of the newest report (or a later
  // one); a beat sent before the newest report names what came before it, so the report says it then.
  // A refusal changes nothing on the host: a beat that knew every report before the refused one still
  // says what it applied.
  const beatFresher = beat?.beat !== undefined && (report === undefined || (beat.beat.reportSequence ?? -1) >= report.sequence - (report.outcome === 'refused' ? 1 : 0));
  const fromReport = report?.declaration && report.outcome !== 'refused' ? report.declaration : null;
  const lastApplied = (beatFresher ? beat!.beat!.lastApplied : undefined) ?? fromReport ?? null;
  const newest = key?.newest ?? null;
  const behind = newest !== null && (lastApplied === null || (newest.digest !== lastApplied.digest && !isNewer(lastApplied, newest)));
  if (behind) problems.push(`behind: the mesh said ${describeOrder(newest)}, it applied ${lastApplied ? describeOrder(lastApplied) : 'nothing yet'}`);
  if (key && !newest) problems.push('its key does not hold a readable envelope');

  // A beat that is not silent and says the state directory cannot be written: nothing can be applied or kept there.
  const disk = !silent && beat?.beat?.disk ? beat.beat.disk : null;
  if (disk) problems.unshift(diskText(disk));
  const failed = disk !== null || (report !== undefined && report.outcome !== 'converged') || (seen !== undefined && !report) || seen?.signature?.verdict === 'failed';
  // Paused by hand: it stands aside on purpose, so what it is behind is said but is not its state.
  const paused = pauseAt(beat?.beat?.paused, nowMs);
  if (paused) problems.unshift(pauseText(paused));
  const state: FleetState = failed ? 'failed' : silent ? 'silent' : paused ? 'paused' : neverHeard ? 'waiting' : behind ? 'behind' : report ? 'converged' : 'waiting';
  if (state === 'waiting') problems.push(neverHeard ? 'no report yet: never heard from (not enrolled yet, or never connected)' : 'no report yet');
  return {
    node,
    state,
    mode: report?.mode ?? null,
    lastOutcome,
    lastApplied,
    newest,
    behind,
    reportSequence: Math.max(beat?.beat?.reportSequence ?? -1, report?.sequence ?? -1) >= 0 ? Math.max(beat?.beat?.reportSequence ?? -1, report?.sequence ?? -1) : null,
    heartbeat,
    silent,
    paused,
    disk,
    ...(seen?.signature ? { signature: seen.signature.verdict } : {}),
    problems,
  };
}

/** The words of a state directory that cannot be written: "disk full" when the system said there is no room. */
function diskText(disk: Fault): string {
  const where = `its state directory${disk.path ? ` ${disk.path}` : ''} cannot be written (${disk.code})`;
  return `${isDiskFull(disk) ? 'disk full' : 'disk failing'}: ${where}; its applies fail until it can`;
}

/**
 * What a monitoring check asks: no node failed, none silent, every one has reported. A node paused was
 * paused on purpose, with a reason, and is shown so without failing the check. A node behind is
 * shown but does not fail the check: right after a send every node is behind for the seconds its apply
 * takes, and one that stays behind while alive and converged is seen in the view.
 */
export function fleetHealthy(rows: FleetRow[]): boolean {
  return rows.every((r) => r.state === 'converged' || r.state === 'behind' || r.state === 'paused' || r.state === 'removed');
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
