/**
 * What meshctl serve sends the page, as types only (the page's bundle carries none of the server's
 * code): rows of the fleet with times as instants, so the page ages them itself between messages.
 */
import type { HistoryLine } from '../fleet/history.js';
import type { Mark } from '../../core/declaration/order.js';
import type { FleetRow, SignatureVerdict } from '../fleet/fleet.js';
import type { Labels } from '../fleet/labels.js';
import type { Report } from '../../engine/report/report.js';
import type { Rollout } from '../fleet/rollout.js';

export interface PageRow extends Omit<FleetRow, 'lastOutcome' | 'heartbeat'> {
  lastOutcome: Omit<NonNullable<FleetRow['lastOutcome']>, 'agoMs'> | null;
  /** When its newest heartbeat was stored (ms since the epoch), and the interval it beats at. */
  heartbeat: { atMs: number; intervalMs: number } | null;
  labels: Labels;
}

/** `snapshot` (every row, on connecting) and `rows` (those that changed since): the server's clock with them. */
export interface RowsMessage {
  nowMs: number;
  rows: PageRow[];
  removed: string[];
}

/** A report as the node's page shows it: the host's own report, with what its signature check said. */
export type PageReport = Pick<Report, 'sequence' | 'trigger' | 'mode' | 'outcome' | 'error' | 'declaration' | 'steps' | 'said' | 'startedAt' | 'finishedAt'> & {
  signature?: SignatureVerdict;
};

/** One resource of the kept declaration, as far as the page may show it: never a content, an env value or a command. */
export interface ResourceView {
  type: string;
  id: string;
  target: string;
  state?: string;
  mode?: string;
  owner?: string;
  group?: string;
  sensitive?: boolean;
}

export interface DeclarationView {
  mark: Mark;
  mode: string;
  resources: ResourceView[];
}

/** `GET /api/node/NODE`: its row, its reports newest first, and the declaration the mesh holds for it. */
export interface NodeView {
  nowMs: number;
  node: string;
  row: PageRow | null;
  reports: PageReport[];
  /** How many reports the stream holds for it (the page shows the newest ones). */
  reportsHeld: number;
  declaration: DeclarationView | null;
  /** Every declaration the mesh keeps for it, newest first (the newest HISTORY_SHOWN). */
  history: HistoryLine[];
  /** How many the mesh keeps. */
  historyHeld: number;
}

/** `GET /api/node/NODE/status`: the host's status answer, or why there is none. */
export type StatusAnswer = { ok: true; status: { state?: unknown; mode?: string | null; reportSequence?: number } & Record<string, unknown> } | { ok: false; error: string };
/** `GET /api/node/NODE/inventory`: the host's inventory answer, or why there is none. */
export type InventoryAnswer = { ok: true; inventory: unknown } | { ok: false; error: string };

/** `GET /api/rollouts`: every rollout the mesh keeps, newest first, in a line each. */
export interface RolloutSummary {
  id: string;
  file: string;
  status: Rollout['status'];
  /** The wave being sent or awaited (from 0), of how many. */
  wave: number;
  waves: number;
  nodes: number;
  halt: Rollout['halt'] | null;
  createdAt: string;
  updatedAt: string;
}

/**
 * `GET /api/rollout/ID`: the rollout as the mesh keeps it, its declaration shown as the node page shows
 * one (each resource's name and where it acts, never a content, an env value or a command).
 */
export interface RolloutView extends Omit<Rollout, 'declaration' | 'version'> {
  nowMs: number;
  mode: string;
  resources: ResourceView[];
}
