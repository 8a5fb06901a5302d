/** Whose a filter is: the mesh's, the found firewall's, a container runtime's, a ban, or anyone else's. */
export type Owner = 'mesh' | 'found' | 'runtime' | 'ban' | 'other';

/** nftables (which also shows iptables-nft's tables), or the kernel's legacy x_tables. */
export type Backend = 'nft' | 'legacy';

/** A chain as read from a tool, before it is judged. */
export interface ReadChain {
  backend: Backend;
  /** nft: ip, ip6, inet, arp, bridge, netdev; legacy: ip or ip6. */
  family: string;
  table: string;
  chain: string;
  /** For a base chain (a built-in one in the legacy filter): the hook it sits on. */
  hook?: string;
  /** For a base chain: its policy, lower case (accept, drop). */
  policy?: string;
  rules: number;
  /** Rules whose verdict is drop or reject. */
  refusing: number;
  /** Chains its rules jump or go to. */
  targets: string[];
}

/** A table or chain that refuses traffic: a base chain whose policy is drop, or a chain with refusing rules. */
export interface Filter extends Omit<ReadChain, 'rules' | 'targets'> {
  kind: 'filter';
  owner: Owner;
  /** The row of the owner table that decided (ufw, firewalld, docker, podman, fail2ban, mesh, …). */
  by: string;
}

/** A tool that could not be asked: the filters it would show are unknown, never "none". */
export interface FiltersUnknown {
  kind: 'unknown';
  backend: Backend;
  command: string;
  reason: string;
}

export type FilterEntry = Filter | FiltersUnknown;

export type FirewallTool = 'ufw' | 'firewalld';

/** What the host keeps of a found firewall (see StoreState.foundFirewall). */
export type RetirementStatus = 'found-inactive' | 'retiring' | 'retired';

/** A found firewall as the host saw it, and what it keeps of it. */
export interface FoundTool {
  tool: FirewallTool;
  /** Whether its filter is loaded now: `unknown` when the tool could not be asked (see reason). */
  state: 'active' | 'inactive' | 'unknown';
  /** Whether it comes back at boot. */
  enabled?: boolean;
  /** The host's convergence state for it, from the store. */
  recorded?: RetirementStatus;
  /** When that state began. */
  since?: string;
  reason: string;
  method: string;
}

/** `report.facts.foundFirewall`: null when no firewall of its kind is installed. */
export interface FoundFirewall {
  tools: FoundTool[];
  /** Set when the machine was not looked at (an apply on a scratch tree), and why. */
  notRead?: string;
}
