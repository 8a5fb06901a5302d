import type { ReadChain } from './filter-types.js';

/** The hooks of the legacy filter's built-in chains. */
const BUILT_IN_HOOKS: Record<string, string> = { INPUT: 'input', OUTPUT: 'output', FORWARD: 'forward', PREROUTING: 'prerouting', POSTROUTING: 'postrouting' };

/**
 * Reads `iptables-legacy-save` (or `ip6tables-legacy-save`) into chains. A rule refuses when its
 * target is DROP or REJECT (`-j`); `-j`/`-g` to a user chain is a jump. Throws on a line it does not
 * know, so that a format it misreads is said, never taken for "no filters".
 */
export function readLegacySave(text: string, family: 'ip' | 'ip6'): ReadChain[] {
  const chains = new Map<string, ReadChain>();
  let table: string | undefined;
  const lines = text.split('\n');
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim();
    const where = () => `line ${index + 1} ('${line.slice(0, 80)}')`;
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('*')) {
      table = line.slice(1);
      continue;
    }
    if (line === 'COMMIT') {
      table = undefined;
      continue;
    }
    if (table === undefined) throw new Error(`${where()} is outside a table`);
    if (line.startsWith(':')) {
      const m = /^:(\S+)\s+(\S+)/.exec(line);
      if (!m) throw new Error(`${where()} is not a chain`);
      const [, name = '', policy = ''] = m;
      const hook = policy !== '-' ? BUILT_IN_HOOKS[name] : undefined;
      chains.set(`${table}\0${name}`, {
        backend: 'legacy',
        family,
        table,
        chain: name,
        ...(hook ? { hook } : {}),
        ...(policy !== '-' ? { policy: policy.toLowerCase() } : {}),
        rules: 0,
        refusing: 0,
        targets: [],
      });
      continue;
    }
    const rule = /^-A\s+(\S+)(.*)$/.exec(line);
    if (!rule) throw new Error(`${where()} is neither a chain nor a rule`);
    const chain = chains.get(`${table}\0${rule[1]}`);
    if (!chain) throw new Error(`${where()} adds to a chain the table did not declare`);
    chain.rules++;
    const target = /\s-([jg])\s+(\S+)/.exec(` ${rule[2]}`);
    if (!target) continue;
    if (target[2] === 'DROP' || target[2] === 'REJECT') chain.refusing++;
    else if (chains.has(`${table}\0${target[2]}`) && !chain.targets.includes(target[2]!)) chain.targets.push(target[2]!);
  }
  if (table !== undefined) throw new Error(`the table ${table} has no COMMIT: the output is cut short`);
  return [...chains.values()];
}
