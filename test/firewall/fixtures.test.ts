import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readLegacySave } from '../../src/machine/filters/legacy.js';
import { readNftRuleset } from '../../src/machine/filters/nft.js';
import { filtersOf } from '../../src/machine/filters/filter-read.js';
import type { Filter } from '../../src/machine/filters/filter-types.js';
import { projectDir } from '../support/cli.js';

/**
 * ufw's filters, the same chains on every backend it runs on; only its user chains (the rules an
 * operator added) differ from one capture to the next, so each capture names theirs.
 */
function ufw(backend: 'nft' | 'legacy', userInput: { ip: number; ip6: number } | undefined): string[] {
  const row = (family: string, chain: string, refusing: number) => `found ufw ${backend} ${family} filter ${chain} - - ${refusing}`;
  const policies = (family: string) => [`found ufw ${backend} ${family} filter FORWARD forward drop 0`, `found ufw ${backend} ${family} filter INPUT input drop 0`];
  return [
    ...policies('ip'),
    row('ip', 'ufw-before-input', 1),
    row('ip', 'ufw-not-local', 1),
    row('ip', 'ufw-skip-to-policy-forward', 1),
    row('ip', 'ufw-skip-to-policy-input', 1),
    ...(userInput ? [row('ip', 'ufw-user-input', userInput.ip)] : []),
    row('ip', 'ufw-user-limit', 1),
    ...policies('ip6'),
    row('ip6', 'ufw6-before-forward', 1),
    row('ip6', 'ufw6-before-input', 2),
    row('ip6', 'ufw6-before-output', 1),
    row('ip6', 'ufw6-skip-to-policy-forward', 1),
    row('ip6', 'ufw6-skip-to-policy-input', 1),
    ...(userInput ? [row('ip6', 'ufw6-user-input', userInput.ip6)] : []),
  ];
}

/**
 * The rulesets under fixtures/rulesets/ were captured from the real tools by the scripts beside them
 * (a systemd container with a private network, or a network namespace). Each filter they hold is
 * listed here as one row, so that a change of the owner table shows as the rows it moves:
 *
 *   owner  by  backend  family  table  chain  hook  policy  refusing-rules
 */
const EXPECTED: Record<string, string[]> = {
  // ufw enabled with a few rules (iptables-nft)
  'ufw': ufw('nft', { ip: 2, ip6: 1 }),
  // firewalld running, a zone of its own and a service (nftables backend)
  'firewalld': [
      'found firewalld nft inet firewalld filter_FORWARD forward accept 3',
      'found firewalld nft inet firewalld filter_FWD_meshlab - - 1',
      'found firewalld nft inet firewalld filter_FWD_public - - 1',
      'found firewalld nft inet firewalld filter_INPUT input accept 2',
      'found firewalld nft inet firewalld filter_IN_meshlab - - 1',
      'found firewalld nft inet firewalld filter_IN_public - - 1',
      'found firewalld nft inet firewalld filter_OUTPUT output accept 1',
      'found firewalld nft inet firewalld filter_PREROUTING prerouting accept 1',
  ],
  // fail2ban, sshd jail with a banned address
  'fail2ban': [
      'ban fail2ban nft ip filter f2b-sshd - - 1',
  ],
  // podman publishing ports, one on an isolated network
  'podman': [
      'runtime podman nft ip filter NETAVARK_ISOLATION_2 - - 1',
  ],
  // a hand-written ruleset with the mesh's table
  'mesh-nft': [
      'mesh mesh nft inet mesh forward forward drop 0',
      'mesh mesh nft inet mesh input input drop 1',
      'other other nft inet filter input input accept 2',
  ],
  // a legacy-iptables machine: ufw, fail2ban and a user chain kept by hand
  'legacy': [
      'ban fail2ban legacy ip filter f2b-sshd - - 1',
      ...ufw('legacy', { ip: 1, ip6: 1 }),
      'other docker-user legacy ip filter DOCKER-USER - - 1',
  ],
  // several at once: the mesh, ufw, fail2ban, podman
  'several': [
      'ban fail2ban nft ip filter f2b-sshd - - 1',
      ...ufw('nft', undefined),
      'mesh mesh nft inet mesh forward forward drop 0',
      'mesh mesh nft inet mesh input input drop 1',
      'other other nft inet filter input input accept 2',
      'runtime podman nft ip filter NETAVARK_ISOLATION_2 - - 1',
  ],
};

function row(f: Filter): string {
  return [f.owner, f.by, f.backend, f.family, f.table, f.chain, f.hook ?? '-', f.policy ?? '-', f.refusing].join(' ');
}

function classified(name: string): string[] {
  const dir = join(projectDir, 'fixtures/rulesets', name);
  const read = (file: string) => readFileSync(join(dir, file), 'utf8');
  const chains = [...readNftRuleset(read('nft.json')), ...readLegacySave(read('iptables-legacy.txt'), 'ip'), ...readLegacySave(read('ip6tables-legacy.txt'), 'ip6')];
  return filtersOf(chains).map(row);
}

describe.each(Object.keys(EXPECTED))('the filters of the captured ruleset %s', (name) => {
  const rows = classified(name);
  it.each(EXPECTED[name]!)('%s', (expected) => {
    expect(rows).toContain(expected);
  });
  it('holds no other filter', () => {
    expect([...rows].sort()).toEqual([...EXPECTED[name]!].sort());
  });
});
