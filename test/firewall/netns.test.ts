import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { readFilters } from '../../src/machine/filters/filter-read.js';
import { systemRunner, type CommandRunner } from '../../src/core/system/runner.js';
import { projectDir } from '../support/cli.js';

/**
 * Reading the filters of a real ruleset: nft and the legacy filter in a network namespace of the
 * test's own (nothing reaches this machine's ruleset).
 */
const unavailable = process.getuid?.() !== 0 ? 'network namespaces need root' : spawnSync('nft', ['--version']).error ? 'nft is not installed' : undefined;
describe.skipIf(unavailable !== undefined && !process.env.CI)(`the filters of a real ruleset${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const ns = `mesh-fw-${process.pid}`;
  const outer = systemRunner();
  const inNs: CommandRunner = { run: (command, args, options) => outer.run('ip', ['netns', 'exec', ns, command, ...args], options) };
  const must = async (command: string, args: string[], input?: string) => {
    const r = await outer.run('ip', ['netns', 'exec', ns, command, ...args], input === undefined ? {} : { input });
    if (r.code !== 0) throw new Error(`${command} ${args.join(' ')}: ${r.stderr}`);
  };

  beforeAll(async () => {
    expect((await outer.run('ip', ['netns', 'add', ns])).code).toBe(0);
  });
  afterAll(async () => {
    await outer.run('ip', ['netns', 'delete', ns]);
  });

  it('a fresh namespace has no filters, and says so only because every tool answered', async () => {
    const { filters } = await readFilters(inNs);
    expect(filters).toEqual([]);
  });

  it('reads nft and the legacy filter in one pass each, and judges each chain with the owner table', async () => {
    await must('nft', ['-f', join(projectDir, 'fixtures/rulesets/mesh.nft')]);
    await must('iptables-legacy', ['-N', 'f2b-sshd']);
    await must('iptables-legacy', ['-A', 'f2b-sshd', '-s', '203.0.113.7', '-j', 'REJECT']);
    await must('iptables-legacy', ['-A', 'INPUT', '-p', 'tcp', '--dport', '22', '-j', 'f2b-sshd']);
    await must('ip6tables-legacy', ['-P', 'FORWARD', 'DROP']);
    const { filters } = await readFilters(inNs);
    expect(filters).toEqual([
      { kind: 'filter', backend: 'nft', family: 'inet', table: 'mesh', chain: 'input', hook: 'input', policy: 'drop', refusing: 1, owner: 'mesh', by: 'mesh' },
      { kind: 'filter', backend: 'nft', family: 'inet', table: 'mesh', chain: 'forward', hook: 'forward', policy: 'drop', refusing: 0, owner: 'mesh', by: 'mesh' },
      { kind: 'filter', backend: 'nft', family: 'inet', table: 'filter', chain: 'input', hook: 'input', policy: 'accept', refusing: 2, owner: 'other', by: 'other' },
      { kind: 'filter', backend: 'legacy', family: 'ip', table: 'filter', chain: 'f2b-sshd', refusing: 1, owner: 'ban', by: 'fail2ban' },
      { kind: 'filter', backend: 'legacy', family: 'ip6', table: 'filter', chain: 'FORWARD', hook: 'forward', policy: 'drop', refusing: 0, owner: 'other', by: 'other' },
    ]);
  });

  it('mesh-host inventory shows them, readable and as JSON', async () => {
    const flags = ['--state-dir', join(projectDir, 'no-such-state'), '--config', join(projectDir, 'no-such-config.json')];
    const json = await outer.run('ip', ['netns', 'exec', ns, process.execPath, join(projectDir, 'bin/mesh-host'), 'inventory', '--json', ...flags], { timeoutMs: 60_000 });
    expect(json.code, json.stderr).toBe(0);
    const parsed = JSON.parse(json.stdout) as { filters: unknown[]; foundFirewall: unknown };
    expect(parsed.filters).toContainEqual(expect.objectContaining({ owner: 'mesh', table: 'mesh', chain: 'input', policy: 'drop' }));
    expect(parsed.filters).toContainEqual(expect.objectContaining({ owner: 'ban', by: 'fail2ban', chain: 'f2b-sshd' }));
    const readable = await outer.run('ip', ['netns', 'exec', ns, process.execPath, join(projectDir, 'bin/mesh-host'), 'inventory', ...flags], { timeoutMs: 60_000 });
    expect(readable.stdout).toMatch(/^filters:$/m);
    expect(readable.stdout).toMatch(/^ {2}mesh +nft +inet mesh input +\(hook input, policy drop, 1 refusing rule\)$/m);
    expect(readable.stdout).toMatch(/^ {2}ban +legacy ip filter f2b-sshd +\(1 refusing rule\) +\[fail2ban\]$/m);
    expect(readable.stdout).toMatch(/^found firewall:$/m);
  });
});
