import type { CommandRunner, RunResult } from '../../core/system/runner.js';
import { CAPABILITIES, type CapabilityKind } from './inventory-probes.js';
import { probeLinks, type LinksFinding } from './net-links.js';
import { methodOf, type Probe, type Verdict } from './verdict.js';

export interface Inventory {
  capabilities: Record<CapabilityKind, Verdict[]>;
  links: LinksFinding;
}

export interface InventoryOptions {
  runner: CommandRunner;
  /** A probe that does not answer within this bound is cut off and said so. */
  probeTimeoutMs?: number;
}

/**
 * Long enough that a loaded machine whose tools answer slowly is still read as it is (a service
 * manager cut off would be reported absent); short enough that a tool that hangs does not hold an
 * inventory, which takes as long as its slowest probe, for long.
 */
export const DEFAULT_PROBE_TIMEOUT_MS = 10_000;

/**
 * Bounds a run even when the runner itself does not (a fake, or a process that ignores SIGKILL
 * in uninterruptible sleep): the verdict is then "cut off", never a hang of the whole inventory.
 */
export function boundedRun(runner: CommandRunner, probe: Pick<Probe, 'command' | 'args'>, timeoutMs: number): Promise<RunResult> {
  let timer: NodeJS.Timeout | undefined;
  const cutOff = new Promise<RunResult>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({
          code: null,
          stdout: '',
          stderr: '',
          failure: { kind: 'timeout', message: `${methodOf(probe)} did not answer within ${timeoutMs} ms and was cut off` },
        }),
      timeoutMs + 100,
    );
  });
  return Promise.race([runner.run(probe.command, probe.args, { timeoutMs }), cutOff]).finally(() => clearTimeout(timer));
}

export async function runProbe(runner: CommandRunner, probe: Probe, timeoutMs: number): Promise<Verdict> {
  const result = await boundedRun(runner, probe, timeoutMs);
  return { name: probe.name, method: methodOf(probe), ...probe.read(result) };
}

/** Every probe at once: the whole inventory takes as long as its slowest probe, bounded. */
export async function takeInventory(options: InventoryOptions): Promise<Inventory> {
  const timeoutMs = options.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const kinds = Object.keys(CAPABILITIES) as CapabilityKind[];
  const [verdicts, links] = await Promise.all([
    Promise.all(kinds.map((kind) => Promise.all(CAPABILITIES[kind].map((p) => runProbe(options.runner, p, timeoutMs))))),
    probeLinks(options.runner, timeoutMs),
  ]);
  const capabilities = Object.fromEntries(kinds.map((kind, i) => [kind, verdicts[i]!])) as Record<CapabilityKind, Verdict[]>;
  return { capabilities, links };
}

/** The service manager an inventory found, if any: systemd before OpenRC. */
export function presentServiceManager(inventory: Pick<Inventory, 'capabilities'>): 'systemd' | 'openrc' | undefined {
  const found = inventory.capabilities.serviceManager.find((v) => v.present);
  return found?.name === 'systemd' || found?.name === 'openrc' ? found.name : undefined;
}

const TITLES: Record<CapabilityKind, string> = {
  serviceManager: 'service manager',
  containerRuntime: 'container runtime',
  packageDatabase: 'package database',
  firewall: 'firewall',
  intrusionPrevention: 'intrusion prevention',
};

export function formatInventory(inventory: Inventory): string {
  const lines: string[] = [];
  for (const [kind, verdicts] of Object.entries(inventory.capabilities) as Array<[CapabilityKind, Verdict[]]>) {
    lines.push(`${TITLES[kind]}:`);
    for (const v of verdicts) {
      lines.push(`  ${v.present ? '+' : '-'} ${v.name.padEnd(16)} ${v.present ? v.detail : 'absent'} — ${v.reason}  [${v.method}]`);
    }
  }
  lines.push('links:');
  if (inventory.links.reason) lines.push(`  (not read: ${inventory.links.reason})`);
  for (const link of inventory.links.links) {
    const addrs = link.addresses.map((a) => `${a.address}/${a.prefix}`).join(' ') || 'no address';
    lines.push(`  ${link.facesOutside ? '>' : ' '} ${link.name.padEnd(16)} ${link.state.padEnd(8)} ${addrs}${link.facesOutside ? `  (faces outside: ${link.why.join(', ')})` : ''}`);
  }
  return lines.join('\n');
}
