import { describeOrder, sameOrder } from '../../core/declaration/order.js';
import { pauseText, type Pause } from '../../../machines/pause.js';
import { formatKeptFoundFirewalls, type KeptFoundFirewall } from '../../machine/filters/filter-kept.js';
import { stateLine } from './state-line.js';

/** A host's answer to `meshctl status NODE`, read loosely: an older host may leave fields out. */
export interface HostStatusSeen {
  node?: string;
  mode?: string | null;
  lastApplied?: { epoch?: number; sequence: number; digest?: string; at?: string } | null;
  kept?: { epoch?: number; sequence: number } | null;
  reportSequence?: number;
  lastOutcome?: { outcome: string; at?: string; reportSequence?: number; message?: string } | null;
  held?: Array<{ id?: string; target?: string; reason?: string }>;
  refusals?: Record<string, unknown>;
  footprint?: number;
  foundFirewall?: KeptFoundFirewall[];
  paused?: Pause | null;
  state?: unknown;
}

/** The host's answer as lines a person reads, in the order `mesh-host status` says them on the machine. */
export function hostStatusLines(s: HostStatusSeen): string[] {
  const refusals = Object.entries(s.refusals ?? {});
  return [
    `node:            ${s.node ?? '?'}`,
    `state:           ${stateLine(s.state)}`,
    `mode:            ${s.mode ?? 'none recorded'}`,
    ...(s.paused ? [`paused:          ${pauseText(s.paused).replace(/^paused /, '')}`] : []),
    `last applied:    ${s.lastApplied ? `${describeOrder(s.lastApplied)}${s.lastApplied.at ? `, at ${s.lastApplied.at}` : ''}` : 'nothing yet'}`,
    ...(s.kept && (!s.lastApplied || !sameOrder(s.kept, s.lastApplied)) ? [`newest held:     ${describeOrder(s.kept)} (not applied yet)`] : []),
    `report sequence: ${s.reportSequence ?? 0}`,
    `last outcome:    ${s.lastOutcome ? `${s.lastOutcome.outcome}${s.lastOutcome.at ? ` at ${s.lastOutcome.at}` : ''}${s.lastOutcome.message ? ` (${s.lastOutcome.message})` : ''}` : 'none'}`,
    `footprint:       ${s.footprint ?? 0} record${s.footprint === 1 ? '' : 's'}`,
    ...formatKeptFoundFirewalls(s.foundFirewall ?? []),
    `held:            ${s.held?.length ?? 0}`,
    ...(s.held ?? []).map((h) => `  ${h.target ?? '?'} (${h.id ?? '?'}): ${h.reason ?? ''}`),
    ...(refusals.length ? [`refusals:        ${refusals.length}`, ...refusals.map(([k, v]) => `  ${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)] : []),
  ];
}
