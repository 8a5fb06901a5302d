import { cpSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { projectDir } from './cli.js';
import { startSystemdContainer, type ContainerOptions, type SystemdContainer } from './systemd-container.js';

/** The pieces of /etc the firewalls read and write (one list, shared with the capture scripts). */
export function firewallEtc(): string[] {
  return readFileSync(join(projectDir, 'fixtures/rulesets/etc-for-firewalls.txt'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

/**
 * A real systemd in a container with a private network, where ufw, firewalld and fail2ban can run
 * and be retired without reaching this machine's ruleset. Its /etc is a fresh tmpfs
 * (--volatile=yes), so their configuration comes in as a scratch copy under `scratch`: nothing they
 * write reaches this machine's /etc.
 */
export async function startFirewallContainer(scratch: string, options: ContainerOptions = {}): Promise<SystemdContainer> {
  const binds = firewallEtc().map((path) => {
    const copy = join(scratch, 'etc', path);
    mkdirSync(dirname(copy), { recursive: true });
    cpSync(join('/etc', path), copy, { recursive: true, verbatimSymlinks: true });
    return `${copy}:/etc/${path}`;
  });
  return startSystemdContainer({
    ...options,
    binds: [...(options.binds ?? []), ...binds],
    privateNetwork: true,
    bootTimeoutMs: options.bootTimeoutMs ?? 120_000,
    // With no network there is nothing to wait for: the wait would hold the boot for two minutes.
    initArgs: ['systemd.mask=systemd-networkd-wait-online.service', ...(options.initArgs ?? [])],
  });
}
