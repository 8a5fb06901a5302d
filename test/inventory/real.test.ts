import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { takeInventory } from '../../src/machine/inventory/inventory.js';
import { systemRunner } from '../../src/core/system/runner.js';
import { containerUnavailable, startSystemdContainer } from '../support/systemd-container.js';
import { useContainer } from '../support/container-block.js';
import { projectDir } from '../support/cli.js';

describe('the detectors against this machine', () => {
  it('finds no systemd as PID 1 here, and says why', async () => {
    const inv = await takeInventory({ runner: systemRunner() });
    const systemd = inv.capabilities.serviceManager.find((v) => v.name === 'systemd')!;
    expect(systemd.present).toBe(false);
    expect(systemd.reason).toMatch(/not the init|not been booted|not installed/);
    // dpkg answers on this Debian machine; nft lists the ruleset as root.
    expect(inv.capabilities.packageDatabase.find((v) => v.name === 'dpkg')!.present).toBe(true);
    expect(inv.links.links.some((l) => l.name === 'lo')).toBe(true);
  });

  it('mesh-host inventory --json is one parseable document', async () => {
    // In a network namespace of its own: the inventory asks ufw, firewalld, nft and the legacy
    // filter for their rulesets, and those of this machine are not the tests' to ask.
    const ns = `mesh-inventory-${process.pid}`;
    const outer = systemRunner();
    expect((await outer.run('ip', ['netns', 'add', ns])).code).toBe(0);
    type Answer = { capabilities: Record<string, unknown[]>; packageManager: { name?: string; detail?: string; reason?: string } };
    const inventory = async (...args: string[]) => {
      const result = await outer.run('ip', ['netns', 'exec', ns, process.execPath, `${projectDir}bin/mesh-host`, 'inventory', '--json', ...args], { timeoutMs: 30_000 });
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as Answer;
    };
    const empty = mkdtempSync(join(tmpdir(), 'mesh-inventory-root-'));
    const [parsed, underEmpty] = await Promise.all([inventory(), inventory('--root', empty, '--state-dir', join(empty, 'state'))]).finally(() => {
      rmSync(empty, { recursive: true, force: true });
      return outer.run('ip', ['netns', 'delete', ns]);
    });
    expect(Object.keys(parsed.capabilities)).toEqual(['serviceManager', 'containerRuntime', 'packageDatabase', 'firewall', 'intrusionPrevention']);
    // The manager the package kind acts through on this Debian machine, with the versions dpkg has of itself and apt.
    expect(parsed.packageManager.name, parsed.packageManager.reason).toBe('dpkg/apt');
    expect(parsed.packageManager.detail).toMatch(/^apt \S+, dpkg \S+$/);
    // Under a root that holds no package database, the one the package kind would act through there: none.
    expect(underEmpty.packageManager).toEqual({ reason: `no package manager this host drives is found under ${empty} (it drives dpkg/apt)` });
  });
});

const unavailable = containerUnavailable();
describe.skipIf(unavailable !== undefined && !process.env.CI)(`against a real systemd in a container${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const box = useContainer(() => startSystemdContainer());

  it('finds systemd present and degraded', async () => {
    const inv = await takeInventory({ runner: box.container.runner });
    const systemd = inv.capabilities.serviceManager.find((v) => v.name === 'systemd')!;
    expect(systemd.present, systemd.reason).toBe(true);
    expect(['degraded', 'running']).toContain(systemd.detail);
  });
});
