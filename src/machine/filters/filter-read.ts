import type { CommandRunner, RunResult } from '../../core/system/runner.js';
import { readLegacySave } from './legacy.js';
import { readNftRuleset } from './nft.js';
import { ownerOf, ownerTable } from './owners.js';
import type { Backend, Filter, FilterEntry, ReadChain } from './filter-types.js';

export const DEFAULT_MESH_PREFIX = 'mesh';

/** One pass of one tool over the ruleset. */
interface Source {
  backend: Backend;
  command: string;
  args: string[];
  /** The legacy tools are asked only when they exist: a machine without them has no legacy filter of theirs. */
  optional: boolean;
  read(stdout: string): ReadChain[];
}

const SOURCES: Source[] = [
  { backend: 'nft', command: 'nft', args: ['-j', 'list', 'ruleset'], optional: false, read: readNftRuleset },
  { backend: 'legacy', command: 'iptables-legacy-save', args: [], optional: true, read: (text) => readLegacySave(text, 'ip') },
  { backend: 'legacy', command: 'ip6tables-legacy-save', args: [], optional: true, read: (text) => readLegacySave(text, 'ip6') },
];

export interface FiltersFinding {
  /** Filters, and a `kind: 'unknown'` entry for each tool that could not be asked. */
  filters: FilterEntry[];
  /** Tools not asked because they are not installed (the legacy ones), said in the inventory. */
  notInstalled: string[];
}

/** Chains that refuse traffic: a base chain whose policy is drop, or one with a rule that drops or rejects. */
export function refusing(chain: ReadChain): boolean {
  return chain.policy === 'drop' || chain.refusing > 0;
}

/** Judges read chains with the owner table: only those that refuse are filters. */
export function filtersOf(chains: readonly ReadChain[], meshPrefix = DEFAULT_MESH_PREFIX): Filter[] {
  const table = ownerTable(meshPrefix);
  return chains.filter(refusing).map((c) => ({
    kind: 'filter',
    backend: c.backend,
    family: c.family,
    table: c.table,
    chain: c.chain,
    ...(c.hook ? { hook: c.hook } : {}),
    ...(c.policy ? { policy: c.policy } : {}),
    refusing: c.refusing,
    ...ownerOf(c, table),
  }));
}

function outcomeOf(source: Source, result: RunResult): { chains: ReadChain[] } | { notInstalled: true } | { reason: string } {
  if (result.failure?.kind === 'missing' && source.optional) return { notInstalled: true };
  if (result.failure) return { reason: result.failure.message };
  if (result.code !== 0) {
    const said = (result.stderr.trim() || result.stdout.trim()).split('\n')[0];
    return { reason: `${source.command} failed${said ? `: ${said}` : ''} (exit ${result.code})` };
  }
  try {
    return { chains: source.read(result.stdout) };
  } catch (err) {
    return { reason: `${source.command} answered with what does not parse: ${(err as Error).message}` };
  }
}

/**
 * Every filter on the machine, in one pass per tool (the three run at once). A tool that is missing,
 * fails or answers with what does not parse is an `unknown` entry naming it and why — never an
 * abort, never taken for "no filters".
 */
export async function readFilters(runner: CommandRunner, options: { meshPrefix?: string; timeoutMs?: number } = {}): Promise<FiltersFinding> {
  const timeoutMs = options.timeoutMs ?? 5000;
  const results = await Promise.all(SOURCES.map((s) => runner.run(s.command, s.args, { timeoutMs })));
  const filters: FilterEntry[] = [];
  const notInstalled: string[] = [];
  SOURCES.forEach((source, i) => {
    const outcome = outcomeOf(source, results[i]!);
    const command = [source.command, ...source.args].join(' ');
    if ('notInstalled' in outcome) notInstalled.push(source.command);
    else if ('reason' in outcome) filters.push({ kind: 'unknown', backend: source.backend, command, reason: outcome.reason });
    else filters.push(...filtersOf(outcome.chains, options.meshPrefix));
  });
  return { filters, notInstalled };
}

/** Filters not read at all, and why (an apply on a scratch tree): one unknown entry per backend. */
export function filtersNotRead(reason: string): FilterEntry[] {
  return [
    { kind: 'unknown', backend: 'nft', command: 'nft -j list ruleset', reason },
    { kind: 'unknown', backend: 'legacy', command: 'iptables-legacy-save; ip6tables-legacy-save', reason },
  ];
}
