import type { Backend, Owner, ReadChain } from './filter-types.js';

/**
 * One row of the owner table: a chain that matches every column given is that owner's. The rows are
 * read top to bottom and the first match decides, so a narrow row (docker's user chain) stands above
 * the wide one it is an exception to.
 */
export interface OwnerRow {
  owner: Owner;
  /** Whose, in a word: shown with each filter. */
  by: string;
  backend?: Backend;
  /** The table's name (nft tables; the legacy filter's are filter, nat, mangle, raw, security). */
  table?: RegExp;
  chain?: RegExp;
  /** A chain whose rules jump into chains matching this (a built-in chain a tool took over). */
  jumpsTo?: RegExp;
  /** Why the row is there, for the reader. */
  note: string;
}

const UFW = /^ufw6?-/;
// firewalld on its iptables backend: its dispatch chains and one set per zone (IN_public, FWDI_public…).
const FIREWALLD = /^((INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING)_(direct|ZONES|IN_ZONES|OUT_ZONES|POLICIES)|(IN|OUT|FWD|FWDI|FWDO|PRE|POST)_[A-Za-z0-9_.-]+)$/;
const DOCKER = /^DOCKER(-ISOLATION-STAGE-\d+|-FORWARD|-CT|-BRIDGE|-INGRESS|-INTERNAL)?$/;
const PODMAN = /^(NETAVARK|CNI|PODMAN)[-_]/;
const FAIL2BAN = /^f2b-/;
const BUILT_IN_FORWARD = /^FORWARD$/;

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The owner table. `meshPrefix` is the prefix of the mesh's own tables (and legacy chains), from the configuration. */
export function ownerTable(meshPrefix: string): OwnerRow[] {
  const mesh = new RegExp(`^${escape(meshPrefix)}`);
  // prettier-ignore
  return [
    // owner      by           backend    table                  chain                  jumpsTo     note
    { owner: 'mesh',    by: 'mesh',      backend: 'nft',    table: mesh,                                                   note: 'what the mesh composes: tables named with its prefix' },
    { owner: 'mesh',    by: 'mesh',      backend: 'legacy',                        chain: mesh,                            note: 'the mesh\'s chains in the legacy filter, named with its prefix' },
    { owner: 'other',   by: 'docker-user',                                         chain: /^DOCKER-USER$/,                 note: 'docker\'s user chain: where people keep their own rules' },
    { owner: 'found',   by: 'ufw',                                                 chain: UFW,                             note: 'ufw\'s chains (ufw-, ufw6-), through iptables-nft or legacy' },
    { owner: 'found',   by: 'firewalld', backend: 'nft',    table: /^firewalld$/,                                          note: 'firewalld on its nftables backend: its own table' },
    { owner: 'found',   by: 'firewalld',                                           chain: FIREWALLD,                       note: 'firewalld on its iptables backend: its dispatch and zone chains' },
    { owner: 'runtime', by: 'docker',                                              chain: DOCKER,                          note: 'docker\'s own chains' },
    { owner: 'runtime', by: 'docker',    backend: 'nft',    table: /^docker-bridges$/,                                     note: 'docker on its nftables backend' },
    { owner: 'runtime', by: 'podman',                                              chain: PODMAN,                          note: 'podman\'s (netavark\'s, CNI\'s) chains' },
    { owner: 'runtime', by: 'podman',    backend: 'nft',    table: /^netavark$/,                                           note: 'netavark on its nftables backend' },
    { owner: 'ban',     by: 'fail2ban',                                            chain: FAIL2BAN,                        note: 'fail2ban\'s chains, one a jail' },
    { owner: 'ban',     by: 'fail2ban',  backend: 'nft',    table: /^f2b-table$/,                                          note: 'fail2ban\'s nftables action\'s table' },
    { owner: 'found',   by: 'ufw',                                                                          jumpsTo: UFW,       note: 'a built-in chain ufw took over: it sets its policy' },
    { owner: 'found',   by: 'firewalld',                                                                    jumpsTo: FIREWALLD, note: 'a built-in chain firewalld took over' },
    { owner: 'runtime', by: 'docker',                                              chain: BUILT_IN_FORWARD, jumpsTo: DOCKER,    note: 'the FORWARD chain docker took over: it sets its policy to drop' },
    { owner: 'other',   by: 'other',                                                                                            note: 'everything else: a hand-written ruleset\'s chains, built-in or not' },
  ];
}

function matches(row: OwnerRow, chain: ReadChain): boolean {
  if (row.backend && row.backend !== chain.backend) return false;
  if (row.table && !row.table.test(chain.table)) return false;
  if (row.chain && !row.chain.test(chain.chain)) return false;
  if (row.jumpsTo && !chain.targets.some((t) => row.jumpsTo!.test(t))) return false;
  return true;
}

/** The first row of the table that matches decides. */
export function ownerOf(chain: ReadChain, table: readonly OwnerRow[]): Pick<OwnerRow, 'owner' | 'by'> {
  const row = table.find((r) => matches(r, chain));
  return row ? { owner: row.owner, by: row.by } : { owner: 'other', by: 'other' };
}
