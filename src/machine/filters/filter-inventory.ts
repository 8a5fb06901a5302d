import type { ServiceManager } from '../services/manager.js';
import type { StoreState } from '../../core/store/state.js';
import type { CommandRunner } from '../../core/system/runner.js';
import { lookAtFirewalld, lookAtUfw, type Look } from './found.js';
import { readFilters, type FiltersFinding } from './filter-read.js';
import { factOf } from './settle.js';
import type { FilterEntry, FoundFirewall } from './filter-types.js';

export interface FirewallFindings {
  filters: FiltersFinding;
  foundFirewall: FoundFirewall | null;
}

/**
 * What `mesh-host inventory` says of the filters and the found firewall: reads only. The filters and
 * ufw are asked at once; firewalld when the service manager is known.
 */
export async function firewallFindings(runner: CommandRunner, manager: Promise<ServiceManager | undefined>, state: StoreState | undefined, meshPrefix?: string): Promise<FirewallFindings> {
  const [filters, ufw, firewalld] = await Promise.all([readFilters(runner, meshPrefix ? { meshPrefix } : {}), lookAtUfw(runner), manager.then((m) => lookAtFirewalld(runner, m))]);
  const looks = [ufw, firewalld].filter((l): l is Look => l !== undefined);
  return { filters, foundFirewall: factOf(looks, { state: state ?? {} }) };
}

/** One line a filter: owner, where it sits, and how it refuses. */
export function formatFilter(entry: FilterEntry): string {
  if (entry.kind === 'unknown') return `  ? unknown  ${entry.backend.padEnd(6)} filters unknown: ${entry.reason}  [${entry.command}]`;
  const how = [entry.hook ? `hook ${entry.hook}` : '', entry.policy ? `policy ${entry.policy}` : '', `${entry.refusing} refusing rule${entry.refusing === 1 ? '' : 's'}`].filter(Boolean).join(', ');
  return `  ${entry.owner.padEnd(8)} ${entry.backend.padEnd(6)} ${entry.family} ${entry.table} ${entry.chain}  (${how})${entry.by !== entry.owner ? `  [${entry.by}]` : ''}`;
}

export function formatFirewallFindings(findings: FirewallFindings): string[] {
  const lines = ['filters:'];
  if (findings.filters.filters.length === 0) lines.push('  none: no table or chain refuses traffic');
  lines.push(...findings.filters.filters.map(formatFilter));
  if (findings.filters.notInstalled.length) lines.push(`  (not installed, so not asked: ${findings.filters.notInstalled.join(', ')})`);
  lines.push('found firewall:');
  if (!findings.foundFirewall) lines.push('  none installed (ufw, firewalld)');
  if (findings.foundFirewall?.notRead) lines.push(`  ${findings.foundFirewall.notRead}`);
  for (const t of findings.foundFirewall?.tools ?? []) {
    const recorded = t.recorded ? `, recorded ${t.recorded.replace('-', ' ')} since ${t.since}` : '';
    lines.push(`  ${t.tool.padEnd(10)} ${t.state}${t.enabled === undefined ? '' : t.enabled ? ', enabled at boot' : ', not enabled at boot'}${recorded} — ${t.reason}  [${t.method}]`);
  }
  return lines;
}
