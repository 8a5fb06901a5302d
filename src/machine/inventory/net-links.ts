import { BlockList, isIPv4 } from 'node:net';
import type { CommandRunner, RunResult } from '../../core/system/runner.js';
import { complaint } from './verdict.js';

export interface LinkAddress {
  family: 'inet' | 'inet6';
  address: string;
  prefix: number;
  scope: string;
  /** Routable on the internet: not private, loopback, link-local, shared or documentation space. */
  public: boolean;
}

export interface Link {
  name: string;
  state: string;
  addresses: LinkAddress[];
  /** Faces outside: carries a public address or the default route. */
  facesOutside: boolean;
  /** Why it faces outside, for the operator (empty when it does not). */
  why: string[];
}

export interface LinksFinding {
  links: Link[];
  /** Set when the links could not be read; the list is then empty, never invented. */
  reason?: string;
  method: string;
}

const notPublic = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
  ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) notPublic.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['2001:db8::', 32],
] as const) notPublic.addSubnet(net, prefix, 'ipv6');

export function isPublicAddress(address: string): boolean {
  return !notPublic.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
}

interface IpAddrEntry {
  ifname: string;
  operstate?: string;
  addr_info?: Array<{ family: string; local: string; prefixlen: number; scope?: string }>;
}
interface IpRouteEntry {
  dst: string;
  dev?: string;
  gateway?: string;
}

/** Reads `ip -j address` and the default routes into links, marking those that face outside. */
export function readLinks(addresses: RunResult, routes4: RunResult, routes6: RunResult): Omit<LinksFinding, 'method'> {
  if (addresses.failure) return { links: [], reason: addresses.failure.message };
  if (addresses.code !== 0) return { links: [], reason: `ip cannot list addresses: ${complaint(addresses)}` };
  let entries: IpAddrEntry[];
  try {
    entries = JSON.parse(addresses.stdout) as IpAddrEntry[];
  } catch {
    return { links: [], reason: 'ip answered, but not with JSON' };
  }
  const defaults = new Map<string, string[]>();
  for (const result of [routes4, routes6]) {
    if (result.failure || result.code !== 0) continue;
    try {
      for (const route of JSON.parse(result.stdout || '[]') as IpRouteEntry[]) {
        if (route.dst !== 'default' || !route.dev) continue;
        const list = defaults.get(route.dev) ?? [];
        list.push(`default route${route.gateway ? ` via ${route.gateway}` : ''}`);
        defaults.set(route.dev, list);
      }
    } catch {
      // A route table that does not parse adds nothing; the addresses still stand.
    }
  }
  const links = entries.map((entry): Link => {
    const linkAddresses = (entry.addr_info ?? [])
      .filter((a) => a.family === 'inet' || a.family === 'inet6')
      .map((a): LinkAddress => ({
        family: a.family as 'inet' | 'inet6',
        address: a.local,
        prefix: a.prefixlen,
        scope: a.scope ?? 'global',
        public: isPublicAddress(a.local),
      }));
    const why = [
      ...linkAddresses.filter((a) => a.public).map((a) => `public address ${a.address}`),
      ...(defaults.get(entry.ifname) ?? []),
    ];
    return { name: entry.ifname, state: entry.operstate ?? 'UNKNOWN', addresses: linkAddresses, facesOutside: why.length > 0, why };
  });
  return { links };
}

export async function probeLinks(runner: CommandRunner, timeoutMs: number): Promise<LinksFinding> {
  const [addresses, routes4, routes6] = await Promise.all([
    runner.run('ip', ['-j', 'address', 'show'], { timeoutMs }),
    runner.run('ip', ['-j', 'route', 'show', 'default'], { timeoutMs }),
    runner.run('ip', ['-j', '-6', 'route', 'show', 'default'], { timeoutMs }),
  ]);
  return { ...readLinks(addresses, routes4, routes6), method: 'ip -j address show; ip -j [-6] route show default' };
}
