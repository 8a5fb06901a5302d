import { describe, expect, it } from 'vitest';
import { ownerOf, ownerTable } from '../../src/machine/filters/owners.js';
import type { ReadChain } from '../../src/machine/filters/filter-types.js';

const chain = (over: Partial<ReadChain>): ReadChain => ({ backend: 'nft', family: 'ip', table: 'filter', chain: 'INPUT', rules: 1, refusing: 1, targets: [], ...over });

/** Each row of the owner table, met by a chain it is there for. */
const CASES: Array<[string, Partial<ReadChain>, string, string]> = [
  ['the mesh\'s table', { family: 'inet', table: 'mesh', chain: 'input' }, 'mesh', 'mesh'],
  ['a table the mesh prefixes', { family: 'inet', table: 'mesh_links', chain: 'in' }, 'mesh', 'mesh'],
  ['the mesh\'s chain in the legacy filter', { backend: 'legacy', chain: 'mesh-input' }, 'mesh', 'mesh'],
  ['docker\'s user chain', { chain: 'DOCKER-USER' }, 'other', 'docker-user'],
  ['ufw\'s chain', { chain: 'ufw-user-input' }, 'found', 'ufw'],
  ['ufw\'s IPv6 chain', { family: 'ip6', chain: 'ufw6-before-input' }, 'found', 'ufw'],
  ['firewalld\'s table', { family: 'inet', table: 'firewalld', chain: 'filter_IN_public' }, 'found', 'firewalld'],
  ['firewalld\'s zone chain on iptables', { backend: 'legacy', chain: 'IN_public_deny' }, 'found', 'firewalld'],
  ['firewalld\'s dispatch chain on iptables', { chain: 'INPUT_ZONES' }, 'found', 'firewalld'],
  ['docker\'s chain', { chain: 'DOCKER' }, 'runtime', 'docker'],
  ['docker\'s isolation', { chain: 'DOCKER-ISOLATION-STAGE-2' }, 'runtime', 'docker'],
  ['docker\'s forward chain', { chain: 'DOCKER-FORWARD' }, 'runtime', 'docker'],
  ['docker on nftables', { table: 'docker-bridges', chain: 'filter-FORWARD' }, 'runtime', 'docker'],
  ['netavark\'s isolation', { chain: 'NETAVARK_ISOLATION_2' }, 'runtime', 'podman'],
  ['CNI\'s chain', { chain: 'CNI-FORWARD' }, 'runtime', 'podman'],
  ['netavark on nftables', { family: 'inet', table: 'netavark', chain: 'FORWARD' }, 'runtime', 'podman'],
  ['a fail2ban jail', { chain: 'f2b-sshd' }, 'ban', 'fail2ban'],
  ['fail2ban\'s nftables table', { family: 'inet', table: 'f2b-table', chain: 'f2b-chain' }, 'ban', 'fail2ban'],
  ['a built-in chain ufw took over', { chain: 'INPUT', hook: 'input', policy: 'drop', refusing: 0, targets: ['ufw-before-input'] }, 'found', 'ufw'],
  ['a built-in chain firewalld took over', { chain: 'INPUT', targets: ['INPUT_direct', 'INPUT_ZONES'] }, 'found', 'firewalld'],
  ['the FORWARD chain docker took over', { chain: 'FORWARD', policy: 'drop', targets: ['DOCKER-USER', 'DOCKER-FORWARD'] }, 'runtime', 'docker'],
  ['a built-in chain with a ban in it', { chain: 'INPUT', policy: 'drop', targets: ['f2b-sshd'] }, 'other', 'other'],
  ['a hand-written built-in chain', { family: 'inet', table: 'filter', chain: 'input', hook: 'input', policy: 'drop' }, 'other', 'other'],
  ['a hand-written chain', { chain: 'blocklist' }, 'other', 'other'],
];

describe('the owner table', () => {
  const table = ownerTable('mesh');
  it.each(CASES)('%s', (_name, over, owner, by) => {
    expect(ownerOf(chain(over), table)).toEqual({ owner, by });
  });

  it('takes the mesh\'s prefix from the configuration', () => {
    expect(ownerOf(chain({ family: 'inet', table: 'fleet', chain: 'input' }), ownerTable('fleet'))).toEqual({ owner: 'mesh', by: 'mesh' });
    expect(ownerOf(chain({ family: 'inet', table: 'mesh', chain: 'input' }), ownerTable('fleet'))).toEqual({ owner: 'other', by: 'other' });
    // A prefix is a name, not a pattern.
    expect(ownerOf(chain({ table: 'meshy' }), ownerTable('m.sh'))).toEqual({ owner: 'other', by: 'other' });
  });

  it('ends with a row that takes everything else', () => {
    expect(table.at(-1)).toMatchObject({ owner: 'other', by: 'other' });
    expect(Object.keys(table.at(-1)!).sort()).toEqual(['by', 'note', 'owner']);
  });
});
