import type { FoundFirewallRecord, StoreState } from '../../core/store/state.js';
import type { FirewallTool } from './filter-types.js';

/** What the store keeps of each found firewall, as `mesh-host status` shows it: one entry a tool the host has a record of. */
export interface KeptFoundFirewall extends FoundFirewallRecord {
  tool: FirewallTool;
  /** In words: found inactive, retiring, retired, or retired again after it was enabled again by hand. */
  state: 'found-inactive' | 'retiring' | 'retired' | 'retired-again';
}

export function keptFoundFirewalls(state: Pick<StoreState, 'foundFirewall'>): KeptFoundFirewall[] {
  return (Object.entries(state.foundFirewall ?? {}) as Array<[FirewallTool, FoundFirewallRecord]>).map(([tool, record]) => ({
    tool,
    ...record,
    state: record.status === 'retired' && (record.retirements ?? 1) > 1 ? 'retired-again' : record.status,
  }));
}

const SAID: Record<KeptFoundFirewall['state'], (k: KeptFoundFirewall) => string> = {
  'found-inactive': (k) => `found inactive at ${k.since}: recorded as found, never the mesh's doing`,
  retiring: (k) => `retiring since ${k.since}${k.stepsDone?.length ? ` (done: ${k.stepsDone.join(', ')})` : ' (no step done yet)'}: the next apply finishes it`,
  retired: (k) => `retired by the mesh at ${k.since}; it stays off across boots`,
  'retired-again': (k) => `retired again at ${k.since}: enabled again by hand after the mesh retired it, ${k.retirements} retirements in all`,
};

/** `found firewall:` lines of `mesh-host status`. */
export function formatKeptFoundFirewalls(kept: readonly KeptFoundFirewall[]): string[] {
  if (kept.length === 0) return ['found firewall:  none recorded (none found active, or not looked at yet)'];
  return ['found firewall:', ...kept.map((k) => `  ${k.tool.padEnd(10)} ${SAID[k.state](k)}`)];
}
