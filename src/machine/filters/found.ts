import type { ServiceManager } from '../services/manager.js';
import type { CommandRunner } from '../../core/system/runner.js';
import type { FirewallTool, FoundTool } from './filter-types.js';

/** The unit of firewalld under each service manager. */
export function firewalldUnit(manager: ServiceManager): string {
  return manager.name === 'openrc' ? 'firewalld' : 'firewalld.service';
}

/** What a look at one found firewall says, before the store's record is added. */
export type Look = Omit<FoundTool, 'recorded' | 'since'>;

/** ufw says itself whether it is enabled (`Status: active`); not installed is no found firewall at all. */
export async function lookAtUfw(runner: CommandRunner): Promise<Look | undefined> {
  const method = 'ufw status';
  const result = await runner.run('ufw', ['status'], { timeoutMs: 15_000 });
  if (result.failure?.kind === 'missing') return undefined;
  if (result.failure) return { tool: 'ufw', state: 'unknown', reason: result.failure.message, method };
  const status = /^Status:\s*(\S+)/m.exec(result.stdout)?.[1];
  if (result.code === 0 && (status === 'active' || status === 'inactive')) {
    // ufw's status is its configuration's ENABLED: active means loaded now and again at boot.
    return { tool: 'ufw', state: status, enabled: status === 'active', reason: `ufw says 'Status: ${status}'`, method };
  }
  const said = (result.stderr.trim() || result.stdout.trim()).split('\n')[0];
  return { tool: 'ufw', state: 'unknown', reason: `ufw gave no status${said ? `: ${said}` : ''} (exit ${result.code})`, method };
}

/** firewalld through the service manager: whether it runs, and whether it comes back at boot. */
export async function lookAtFirewalld(runner: CommandRunner, manager: ServiceManager | undefined): Promise<Look | undefined> {
  if (!manager) return askFirewalld(runner);
  const unit = firewalldUnit(manager);
  const method = manager.name === 'systemd' ? `systemctl show ${unit}` : 'rc-service --list; rc-status --all; rc-update show default';
  let state;
  try {
    state = (await manager.query([unit])).get(unit);
  } catch (err) {
    return { tool: 'firewalld', state: 'unknown', reason: (err as Error).message, method };
  }
  if (!state || state.loadState === 'not-found') return undefined;
  const active = state.activeState === 'active' || state.activeState === 'activating' || state.activeState === 'reloading';
  const enabled = state.unitFileState === 'enabled';
  return {
    tool: 'firewalld',
    state: active ? 'active' : 'inactive',
    enabled,
    reason: `${manager.name} says ${unit} is ${state.activeState} and ${enabled ? 'enabled' : state.unitFileState || 'not enabled'}`,
    method,
  };
}

/** Without a service manager firewalld itself is asked (`running`, or `not running` with exit 252). */
async function askFirewalld(runner: CommandRunner): Promise<Look | undefined> {
  const method = 'firewall-cmd --state';
  const result = await runner.run('firewall-cmd', ['--state'], { timeoutMs: 15_000 });
  if (result.failure?.kind === 'missing') return undefined;
  if (result.failure) return { tool: 'firewalld', state: 'unknown', reason: result.failure.message, method };
  const said = (result.stdout.trim() || result.stderr.trim()).split('\n')[0] ?? '';
  if (said === 'running') return { tool: 'firewalld', state: 'active', reason: "firewall-cmd says 'running'", method };
  // firewalld is a D-Bus service: without a system bus it cannot be running.
  if (said === 'not running' || /Failed to connect to socket .*system_bus_socket/.test(result.stderr)) return { tool: 'firewalld', state: 'inactive', reason: `firewall-cmd says '${said === 'not running' ? said : 'no system bus'}' (no service manager to ask whether it starts at boot)`, method };
  return { tool: 'firewalld', state: 'unknown', reason: `firewall-cmd gave no state${said ? `: ${said}` : ''} (exit ${result.code})`, method };
}

/** Every found firewall installed here, ufw first. */
export async function lookAtFoundFirewalls(runner: CommandRunner, manager: ServiceManager | undefined): Promise<Look[]> {
  const looks = await Promise.all([lookAtUfw(runner), lookAtFirewalld(runner, manager)]);
  return looks.filter((l): l is Look => l !== undefined);
}

/** Whether it must be retired: its filter is loaded, or it would come back at the next boot. */
export function isLive(look: Look): boolean {
  return look.state === 'active' || look.enabled === true;
}

export const TOOLS: readonly FirewallTool[] = ['ufw', 'firewalld'];
