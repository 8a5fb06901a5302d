import type { ReadChain } from './filter-types.js';

interface NftChain {
  family: string;
  table: string;
  name: string;
  hook?: string;
  policy?: string;
}
interface NftRule {
  family: string;
  table: string;
  chain: string;
  expr?: unknown[];
}

/** What one rule's expressions say: whether it refuses, and the chains it jumps or goes to. */
export interface RuleVerdicts {
  refuses: boolean;
  targets: string[];
}

/**
 * Walks a rule's expressions for its verdicts, wherever they sit: a plain `drop`, a `reject`, a verdict
 * map (`ct state vmap { invalid : drop }`), or an iptables target nft could not translate (`xt`).
 */
export function verdictsOf(expr: unknown): RuleVerdicts {
  const found: RuleVerdicts = { refuses: false, targets: [] };
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
      if (key === 'drop' || key === 'reject') found.refuses = true;
      else if ((key === 'jump' || key === 'goto') && value && typeof (value as { target?: unknown }).target === 'string') found.targets.push((value as { target: string }).target);
      else if (key === 'xt' && value && /^(DROP|REJECT)$/.test(String((value as { name?: unknown }).name))) found.refuses = true;
      else walk(value);
    }
  };
  walk(expr);
  return found;
}

/** Reads `nft -j list ruleset` into chains; throws when the text is not such a ruleset. */
export function readNftRuleset(text: string): ReadChain[] {
  const parsed = JSON.parse(text) as unknown;
  const items = (parsed as { nftables?: unknown }).nftables;
  if (!Array.isArray(items)) throw new Error('no "nftables" list in its output');
  const chains = new Map<string, ReadChain>();
  const key = (family: string, table: string, chain: string) => `${family}\0${table}\0${chain}`;
  for (const item of items as Array<Record<string, unknown>>) {
    const chain = item.chain as NftChain | undefined;
    if (!chain) continue;
    if (typeof chain.name !== 'string' || typeof chain.table !== 'string' || typeof chain.family !== 'string') throw new Error('a chain without family, table or name');
    chains.set(key(chain.family, chain.table, chain.name), {
      backend: 'nft',
      family: chain.family,
      table: chain.table,
      chain: chain.name,
      ...(chain.hook ? { hook: chain.hook } : {}),
      ...(chain.policy ? { policy: chain.policy } : {}),
      rules: 0,
      refusing: 0,
      targets: [],
    });
  }
  for (const item of items as Array<Record<string, unknown>>) {
    const rule = item.rule as NftRule | undefined;
    if (!rule) continue;
    const chain = chains.get(key(rule.family, rule.table, rule.chain));
    if (!chain) throw new Error(`a rule in ${rule.family} ${rule.table} ${rule.chain}, a chain the ruleset does not list`);
    const verdicts = verdictsOf(rule.expr ?? []);
    chain.rules++;
    if (verdicts.refuses) chain.refusing++;
    for (const target of verdicts.targets) if (!chain.targets.includes(target)) chain.targets.push(target);
  }
  return [...chains.values()];
}
