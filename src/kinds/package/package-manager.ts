/**
 * The package manager, as the package kind reaches it: a seam with one implementation today, Debian's
 * dpkg and apt (apt-manager.ts). apk or rpm would be another implementation of this; the kind's rules
 * (what is found, held, taken and given back) are the handler's and do not change.
 */

/** A package as the manager's database has it. `broken`: unpacked, half-installed or half-configured. */
export interface Installed {
  version: string;
  state: 'installed' | 'broken' | 'absent';
  /** The database's own words for its state (dpkg's `ii`, `iU`, `rc`), for a report. */
  status: string;
}

/** One operation of the transaction: a package to have at a version (none: the one offered), or removed. */
export type Operation = { name: string; version?: string } | { name: string; remove: true };

/** What the manager's simulation says it would do to one package, with its versions. */
export interface Simulated {
  name: string;
  action: 'install' | 'upgrade' | 'downgrade' | 'remove';
  from?: string;
  to?: string;
}

export type Simulation = { ok: true; actions: Simulated[] } | { ok: false; said: string };

export interface PackageManager {
  /** Its name, as the inventory names it: the database and the tool that fetches and resolves (`dpkg/apt`). */
  readonly name: string;
  /** The program whose words a report quotes when the transaction or its simulation fails (`apt-get`). */
  readonly tool: string;
  /** What is installed of the manager itself, for the inventory (`dpkg 1.21.22, apt 2.6.1`), in one query. */
  describe(): Promise<string>;
  /** The named packages as installed now, in one query; a package the database does not know is absent. */
  installed(names: readonly string[]): Promise<Map<string, Installed>>;
  /** The versions the repositories offer of each named package, in one query. */
  offered(names: readonly string[]): Promise<Map<string, string[]>>;
  /** The transaction simulated by the manager itself: what it would do, or why it would fail. */
  simulate(operations: readonly Operation[]): Promise<Simulation>;
  /** The one transaction: every operation at once. Why it failed, or nothing. */
  transact(operations: readonly Operation[]): Promise<string | undefined>;
}
