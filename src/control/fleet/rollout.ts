import { createHash } from 'node:crypto';
import { describeOrder, sameOrder, type Order } from '../../core/declaration/order.js';
import type { Envelope } from '../../core/declaration/envelope.js';
import type { Pause } from '../../../machines/pause.js';
import type { DeferredSeen } from './deferred.js';

/**
 * A rollout's decisions, pure: the order of the nodes, their waves, what a report or a heartbeat makes
 * of a node, and what the rollout does next. The command that drives it (control/commands/rollout-run.ts)
 * sends, listens, keeps the record and prints; it decides nothing itself.
 */

/** What halts a rollout when a node of the wave comes to it. */
export const HALT_REASONS = ['failed', 'refused', 'silent'] as const;
export type HaltReason = (typeof HALT_REASONS)[number];

/**
 * Where one node stands. `sending`: written before its copy is put, so a rollout killed in the middle
 * sends it again only if its key does not hold the declaration yet. `sent`: its copy is in its key and
 * its report of that copy is awaited.
 */
export type NodePhase = 'pending' | 'sending' | 'sent' | 'converged' | HaltReason;

/** A host paused by hand, as its heartbeat says it. */
export type PauseSeen = Pause;

export interface NodeProgress {
  phase: NodePhase;
  /** The copy it was sent (its number), once it is. */
  mark?: Order;
  /** When the wait for its report began (or began again, after a pause or a resume). */
  waitFromMs?: number;
  /** The report that settled it: its sequence, and the resource and error of a failure or a refusal. */
  report?: number;
  resource?: string;
  error?: string;
  /** The newest report sequence heard before its copy was sent: a refusal that names no declaration and comes later is this copy's. */
  reportBefore?: number;
  /** Its copy is sent again even if its key holds this declaration: it failed, and the rollout was resumed. */
  again?: boolean;
  /** Set while its heartbeat says it is paused. */
  paused?: PauseSeen;
  /** Set while its report of the copy says a restart or replacement is held off by a lock. */
  deferred?: DeferredSeen[];
}


/** `proposed`: signed by one control key under a trust root that needs more, it waits for `meshctl approve`; nothing is sent. */
export type RolloutStatus = 'proposed' | 'running' | 'halted' | 'done' | 'aborted';

/**
 * A node's copy signed before the rollout runs (under a trust root that needs more than one signature, every
 * copy is numbered and signed when the rollout is proposed and approved once, as a whole), or the mark its
 * key holds already when that is the same declaration (nothing to send).
 */
export type SignedCopy = { envelope: Envelope; mark: Order } | { unchanged: Order };

/** A rollout as the mesh keeps it (one key of the bucket mesh_rollouts). */
export interface Rollout {
  version: 1;
  id: string;
  file: string;
  /** sha256 of the declaration as given, without node or sequence: what every node is sent. */
  digest: string;
  declaration: Record<string, unknown>;
  /** Each node's own declaration, when they differ (a rollback puts back what each node had); `declaration` for a node not named. */
  declarations?: Record<string, Record<string, unknown>>;
  epoch?: number;
  /** The nodes of each wave, in the order of their hash. */
  waves: string[][];
  /** The wave being sent or awaited. */
  wave: number;
  waitMs: number;
  haltOn: HaltReason[];
  status: RolloutStatus;
  nodes: Record<string, NodeProgress>;
  halt?: { node: string; phase: HaltReason; resource?: string; error?: string; wave: number };
  /** The proposal that waits for approval (status `proposed`): `meshctl approve ID` signs every copy, and the rollout runs. */
  proposal?: string;
  /** Every node's copy, signed by as many control keys as the trust root needs: the rollout sends these and signs nothing itself. */
  signed?: Record<string, SignedCopy>;
  /** The meshctl driving it: a resume is refused while it lives. */
  owner?: { host: string; pid: number; beatAt: string };
  createdAt: string;
  updatedAt: string;
}

/** The hash a node is ordered by: the same fleet gets the same waves, whatever order it was listed in. */
export const nodeHash = (node: string) => createHash('sha256').update(node).digest('hex');

export function orderNodes(nodes: string[]): string[] {
  const keyed = [...new Set(nodes)].map((node) => ({ node, hash: nodeHash(node) }));
  return keyed.sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0)).map((k) => k.node);
}

/** One entry of --waves: a count of nodes, or a share of them; each is how many have been reached by the end of that wave. */
export type WaveSize = { count: number } | { percent: number };

/** `1,10%,50%,100%` as sizes, or what is wrong with it. */
export function parseWaves(text: string): WaveSize[] | string {
  const sizes: WaveSize[] = [];
  for (const part of text.split(',').map((p) => p.trim())) {
    const m = /^(\d+(?:\.\d+)?)(%?)$/.exec(part);
    if (!m) return `--waves ${text}: '${part}' is neither a count of nodes (5) nor a share of them (10%)`;
    const n = Number(m[1]);
    if (m[2] === '%' ? n <= 0 || n > 100 : n < 1 || !Number.isInteger(n)) return `--waves ${text}: '${part}' must be ${m[2] ? 'over 0% and at most 100%' : 'a whole count of at least 1'}`;
    sizes.push(m[2] ? { percent: n } : { count: n });
  }
  return sizes;
}

/**
 * The waves: each size is how many nodes have been reached once its wave is done (a share rounded up),
 * so `1,10%,50%,100%` over 20 nodes is waves of 1, 1, 8 and 10. A size that reaches no new node adds no
 * wave. The last must reach every node: what a rollout leaves out is said by --nodes or --select.
 */
export function splitWaves(ordered: string[], sizes: WaveSize[], text: string): string[][] | string {
  const waves: string[][] = [];
  let reached = 0;
  for (const size of sizes) {
    const upTo = 'count' in size ? Math.min(size.count, ordered.length) : Math.ceil((size.percent / 100) * ordered.length);
    if (upTo < reached) return `--waves ${text}: the sizes are how many nodes have been reached after each wave, so they must not shrink`;
    if (upTo > reached) waves.push(ordered.slice(reached, upTo));
    reached = Math.max(reached, upTo);
  }
  if (reached < ordered.length) return `--waves ${text}: the last wave reaches ${reached} of the ${ordered.length} nodes; end with 100% (a rollout to fewer nodes names them with --nodes or --select)`;
  return waves;
}

/** A node's newest report, as much of it as the rollout judges by. */
export interface ReportHeard {
  sequence: number;
  declaration: Order | null;
  outcome: 'converged' | 'failed' | 'refused';
  error?: { resource?: string; message: string };
  /** Steps the host held off (converged otherwise): the host does them when their locks go, and reports again. */
  deferred?: DeferredSeen[];
}

/**
 * What the newest report and heartbeat make of a node awaited: its report of the copy it was sent settles
 * it; a refusal naming no declaration, heard after the send, is taken as this copy's. While its heartbeat
 * says it is paused it is waited for, its clock stopped: the wait begins again when it is seen unpaused.
 * A report that converged but held a restart off for a lock is not the end of the copy either: the host
 * makes that restart when the lock goes, or at the lock's bound at the latest, and reports again, and a
 * restart that fails then must halt the rollout. So the node is waited for, its wait counted from that
 * bound. Without a report within the wait, it is silent.
 */
export function judge(progress: NodeProgress, heard: { report?: ReportHeard; paused?: PauseSeen | null }, nowMs: number, waitMs: number): NodeProgress {
  if (progress.phase !== 'sent' || !progress.mark) return progress;
  const r = heard.report;
  const forThisCopy = r && (r.declaration ? sameOrder(r.declaration, progress.mark) : r.outcome === 'refused' && r.sequence > (progress.reportBefore ?? -1));
  if (r && forThisCopy && r.outcome === 'converged' && r.deferred?.length) {
    const { paused: _, ...rest } = progress;
    return { ...rest, deferred: r.deferred, waitFromMs: Math.max(progress.waitFromMs ?? nowMs, ...r.deferred.map((d) => Date.parse(d.until))) };
  }
  if (r && forThisCopy) {
    const { paused: _, again: __, deferred: ___, ...rest } = progress;
    return { ...rest, phase: r.outcome, report: r.sequence, ...(r.error?.resource ? { resource: r.error.resource } : {}), ...(r.error ? { error: r.error.message } : {}) };
  }
  if (heard.paused) return { ...progress, paused: heard.paused, waitFromMs: nowMs };
  const { paused: _, ...rest } = progress;
  const waitFromMs = progress.waitFromMs ?? nowMs;
  if (nowMs - waitFromMs >= waitMs) return { ...rest, phase: 'silent', waitFromMs, error: `no report of ${describeOrder(progress.mark)} within ${Math.round(waitMs / 1000)}s` };
  return { ...rest, waitFromMs };
}

/** What the rollout does next. */
export type Decision =
  | { kind: 'send'; nodes: string[] }
  | { kind: 'wait'; nodes: string[]; paused: string[]; deadlineMs: number }
  | { kind: 'advance'; wave: number }
  | { kind: 'halt'; node: string; phase: HaltReason }
  | { kind: 'done' };

/**
 * The next step: halt on the first node of the wave (in its order) that came to a reason to halt; send
 * the nodes of the wave not sent yet; wait for those sent; then the next wave, or done. A node that
 * failed, was refused or went silent without that halting (--halt-on) counts as finished.
 */
export function decide(r: Pick<Rollout, 'waves' | 'wave' | 'nodes' | 'haltOn' | 'waitMs'>): Decision {
  const wave = r.waves[r.wave] ?? [];
  const phase = (n: string) => r.nodes[n]?.phase ?? 'pending';
  const halting = wave.find((n) => (r.haltOn as NodePhase[]).includes(phase(n)));
  if (halting) return { kind: 'halt', node: halting, phase: phase(halting) as HaltReason };
  const unsent = wave.filter((n) => phase(n) === 'pending' || phase(n) === 'sending');
  if (unsent.length > 0) return { kind: 'send', nodes: unsent };
  const waiting = wave.filter((n) => phase(n) === 'sent');
  if (waiting.length > 0) {
    const deadlineMs = Math.min(...waiting.filter((n) => !r.nodes[n]!.paused).map((n) => (r.nodes[n]!.waitFromMs ?? 0) + r.waitMs));
    return { kind: 'wait', nodes: waiting, paused: waiting.filter((n) => r.nodes[n]!.paused), deadlineMs };
  }
  return r.wave + 1 < r.waves.length ? { kind: 'advance', wave: r.wave + 1 } : { kind: 'done' };
}

/**
 * A halted rollout taken up again: nodes that failed or were refused are sent their copy again (a new
 * number, so the host applies it again after the fix) unless a newer report of the same copy says they
 * converged since; silent ones are awaited anew. Nothing converged or not yet sent is touched.
 */
export function resumeNodes(r: Rollout, latest: Map<string, ReportHeard>, nowMs: number): Record<string, NodeProgress> {
  const nodes = { ...r.nodes };
  for (const [node, p] of Object.entries(r.nodes)) {
    if (p.phase === 'silent') nodes[node] = { ...withoutVerdict(p), phase: 'sent', waitFromMs: nowMs };
    if (p.phase !== 'failed' && p.phase !== 'refused') continue;
    const later = judge({ ...withoutVerdict(p), phase: 'sent', waitFromMs: nowMs }, { report: latest.get(node) }, nowMs, r.waitMs);
    const fixed = later.phase === 'converged' && (later.report ?? -1) > (p.report ?? -1);
    nodes[node] = fixed ? later : { phase: 'pending', again: true, ...(p.mark ? { mark: p.mark } : {}) };
  }
  return nodes;
}

function withoutVerdict(p: NodeProgress): NodeProgress {
  const { report: _, resource: __, error: ___, ...rest } = p;
  return rest;
}

/** Counts by phase, for the progress line and the events. */
export function tally(r: Pick<Rollout, 'nodes'>, nodes: string[]): Record<NodePhase | 'paused' | 'deferred', number> {
  const counts = { pending: 0, sending: 0, sent: 0, converged: 0, failed: 0, refused: 0, silent: 0, paused: 0, deferred: 0 };
  for (const n of nodes) {
    const p = r.nodes[n];
    counts[p?.phase ?? 'pending']++;
    if (p?.paused) counts.paused++;
    if (p?.phase === 'sent' && p.deferred) counts.deferred++;
  }
  return counts;
}
