import type { Order } from '../../core/declaration/order.js';
import { formatAgo } from './fleet.js';
import { deferredText, type DeferredSeen } from './deferred.js';
import { tally, type HaltReason, type PauseSeen, type Rollout } from './rollout.js';

/** What a rollout says when it starts or is resumed: the declaration, the nodes, the waves' sizes and the rules. */
interface Begun {
  id: string;
  file: string;
  digest: string;
  nodes: number;
  waves: number[];
  waitMs: number;
  haltOn: HaltReason[];
}

/** What a rollout says as it goes: one JSON line each under --json, and the lines and progress of the terminal. */
export type RolloutEvent =
  | ({ event: 'started' } & Begun)
  | ({ event: 'resumed' } & Begun)
  | { event: 'wave'; id: string; wave: number; of: number; nodes: string[] }
  | { event: 'sent'; node: string; mark: Order; revision: number; again?: true }
  | { event: 'unchanged'; node: string; mark: Order }
  | { event: 'node'; node: string; phase: 'converged' | HaltReason; report?: number; resource?: string; error?: string }
  | ({ event: 'paused'; node: string } & PauseSeen)
  | { event: 'unpaused'; node: string }
  | { event: 'deferred'; node: string; deferred: DeferredSeen[] }
  | { event: 'untrusted'; node: string; sequence?: number; reason: string }
  | { event: 'wave-done'; id: string; wave: number; of: number; converged: number; elapsedMs: number }
  | { event: 'halted'; id: string; wave: number; of: number; node: string; phase: HaltReason; resource?: string; error?: string; untouched: number }
  | { event: 'done'; id: string; nodes: number; converged: number; elapsedMs: number }
  | { event: 'aborted'; id: string; by?: string };

const list = (nodes: string[]) => `${nodes.slice(0, 8).join(', ')}${nodes.length > 8 ? `, … (${nodes.length - 8} more)` : ''}`;

import { pauseText } from '../../../machines/pause.js';

export { pauseText };

/** The line an event is on a terminal or in a log; undefined for what only --json says one node at a time (each send, each convergence). */
export function describeEvent(e: RolloutEvent): string | undefined {
  switch (e.event) {
    case 'started':
    case 'resumed':
      return `rollout ${e.id} ${e.event}: ${e.file} (${e.digest.slice(0, 19)}…) to ${e.nodes} node${e.nodes === 1 ? '' : 's'} in ${e.waves.length} wave${e.waves.length === 1 ? '' : 's'} (${e.waves.join(', ')}); each report awaited ${formatAgo(e.waitMs)}, halting on ${e.haltOn.join(', ')}`;
    case 'wave':
      return `wave ${e.wave} of ${e.of}: ${e.nodes.length} node${e.nodes.length === 1 ? '' : 's'}: ${list(e.nodes)}`;
    case 'wave-done':
      return `wave ${e.wave} of ${e.of} done: ${e.converged} converged (${formatAgo(e.elapsedMs)})`;
    case 'node':
      return e.phase === 'converged' ? undefined : `${e.node}  ${e.phase}${e.resource ? `: ${e.resource}` : ''}${e.error ? `: ${e.error}` : ''}`;
    case 'paused':
      return `${e.node}  ${pauseText(e)}; waiting for it (a paused node is not a failure)`;
    case 'unpaused':
      return `${e.node}  no longer paused; waiting for its report`;
    case 'deferred':
      return `${e.node}  converged but for ${e.deferred.map(deferredText).join('; ')}; waiting for its report of it (a held restart is not a failure)`;
    case 'untrusted':
      return `${e.node}  a report${e.sequence === undefined ? '' : ` (#${e.sequence})`} whose signature fails was set aside: ${e.reason}`;
    case 'halted':
      return [
        `halted at wave ${e.wave} of ${e.of}: ${e.node} ${e.phase}${e.resource ? `: ${e.resource}` : ''}${e.error ? `: ${e.error}` : ''}`,
        `  ${e.untouched} node${e.untouched === 1 ? '' : 's'} of later waves untouched; after a fix: meshctl rollout --resume ${e.id} (or --abort ${e.id})`,
      ].join('\n');
    case 'done':
      return `rollout ${e.id} done: ${e.converged} of ${e.nodes} node${e.nodes === 1 ? '' : 's'} converged (${formatAgo(e.elapsedMs)})`;
    case 'aborted':
      return `rollout ${e.id} aborted${e.by ? ` by ${e.by}` : ''}: nodes not yet sent keep what they have`;
    default:
      return undefined;
  }
}

/** The terminal's one progress line: the wave, its nodes by state, and the time. */
export function progressLine(r: Rollout, elapsedMs: number): string {
  const wave = r.waves[r.wave] ?? [];
  const t = tally(r, wave);
  const parts = [`${t.converged} converged`, `${t.sent + t.sending + t.pending - t.paused} waiting`, ...(t.paused ? [`${t.paused} paused`] : []), ...(t.deferred ? [`${t.deferred} deferred`] : []), `${t.failed + t.refused + t.silent} failed`];
  return `wave ${r.wave + 1}/${r.waves.length} (${wave.length} node${wave.length === 1 ? '' : 's'}): ${parts.join(', ')} · ${formatAgo(elapsedMs)}`;
}
