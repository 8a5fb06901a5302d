import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Report } from '../../src/engine/report/report.js';
import type { ApplyResult } from '../../src/engine/apply/apply.js';
import { declaration, testHost, type TestHost } from '../support/host.js';
import { fakeRunner, said } from '../support/fake-runner.js';

/**
 * The post-apply hook through the one apply path, in-process, over a runner that answers as ufw does
 * (the real tools are in retire-real.test.ts). nft is missing here: its filters are unknown.
 */
let hosts: TestHost[] = [];
afterEach(() => {
  hosts.forEach((h) => h.cleanup());
  hosts = [];
});

function ufwHost(options: { disable?: ReturnType<typeof said> } = {}) {
  let enabled = true;
  const runner = fakeRunner({
    ufw: (args) => {
      if (args[0] === 'status') return said(`Status: ${enabled ? 'active' : 'inactive'}\n`);
      if (args[0] === 'disable') {
        if (options.disable) return options.disable;
        enabled = false;
        return said('Firewall stopped and disabled on system startup\n');
      }
      return said('', 1, `unexpected ufw ${args.join(' ')}`);
    },
  });
  const host = testHost();
  hosts.push(host);
  host.env.firewall = { runner };
  return { host, runner, disables: () => runner.calls.filter((c) => c.command === 'ufw' && c.args[0] === 'disable').length, enable: () => (enabled = true) };
}
const report = (r: ApplyResult): Report => (r as { report: Report }).report;

describe('the found firewall after an apply', () => {
  it('is retired after a converged apply on a converged machine, and the report carries it as retired', async () => {
    const { host, disables } = ufwHost();
    const r = report(await host.apply(declaration([{ type: 'directory', id: 'app', path: '/srv/app' }])));
    expect(r.outcome).toBe('converged');
    expect(disables()).toBe(1);
    expect(r.said).toContain('found firewall ufw was active: retired (ufw disable); it stays off across boots');
    expect(r.facts.foundFirewall).toEqual({ tools: [expect.objectContaining({ tool: 'ufw', state: 'inactive', recorded: 'retired' })] });
    expect(r.facts.filters).toContainEqual(expect.objectContaining({ kind: 'unknown', command: 'nft -j list ruleset', reason: 'nft is not installed (not found on PATH)' }));
    host.reopen();
    expect(host.env.store.state.foundFirewall?.ufw).toMatchObject({ status: 'retired', retirements: 1 });
  });

  it('is skipped after a failed apply, and that is said', async () => {
    const { host, disables } = ufwHost();
    // A directory made immutable: the plan sees it there, the write into it fails at the apply.
    const locked = join(host.root, 'locked');
    mkdirSync(locked);
    execFileSync('chattr', ['+i', locked]);
    let r: Report;
    try {
      r = report(await host.apply(declaration([{ type: 'file', id: 'nowhere', path: '/locked/file', content: '' }])));
    } finally {
      execFileSync('chattr', ['-i', locked]);
    }
    expect(r.outcome).toBe('failed');
    expect(disables()).toBe(0);
    expect(r.said).toContain("found firewall ufw is active and was not retired: the apply failed, so the mesh's own filter may not be in place");
    expect(r.facts.foundFirewall?.tools[0]).toMatchObject({ tool: 'ufw', state: 'active' });
  });

  it('a retirement that fails fails the apply, stays retiring, and is tried again at the next apply', async () => {
    const options: { disable?: ReturnType<typeof said> } = { disable: said('', 1, 'ERROR: problem running ufw-init') };
    const failing = ufwHost(options);
    const first = report(await failing.host.apply(declaration([])));
    expect(first.outcome).toBe('failed');
    expect(first.error?.message).toBe('found firewall ufw was active; retiring it failed: ufw disable failed: ERROR: problem running ufw-init (exit 1); it is finished at the next apply');
    expect(failing.host.env.store.state.foundFirewall?.ufw).toMatchObject({ status: 'retiring', stepsDone: [] });

    delete options.disable;
    const next = report(await failing.host.apply(declaration([], { sequence: 2 })));
    expect(next.outcome).toBe('converged');
    expect(next.said).toContainEqual(expect.stringMatching(/^the retirement of found firewall ufw, begun at \S+ and not finished, was finished: retired \(ufw disable\)/));
    expect(failing.host.env.store.state.foundFirewall?.ufw).toMatchObject({ status: 'retired', retirements: 1 });
  });

  it('is only reported on an adopted machine', async () => {
    const { host, disables } = ufwHost();
    const r = report(await host.apply(declaration([], { mode: 'adopted' })));
    expect(r.outcome).toBe('converged');
    expect(disables()).toBe(0);
    expect(r.said).toContain("found firewall ufw is active: left alone (an adopted machine's found firewall is only reported)");
  });
});
