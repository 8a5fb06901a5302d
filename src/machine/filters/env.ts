import type { CommandRunner } from '../../core/system/runner.js';
import type { FirewallEnv } from './settle.js';

/**
 * The firewall's part of the host's environment. An apply on a scratch tree (`--root` other than /)
 * is not this machine's: its filters are neither read nor its found firewall retired, and the report
 * says so instead of claiming there are none.
 */
export function firewallEnv(runner: CommandRunner, options: { root: string; meshPrefix?: string | undefined }): FirewallEnv {
  if (options.root !== '/') {
    return { runner, notHere: `not read: the apply ran on the scratch tree ${options.root} (--root), not on this machine` };
  }
  return { runner, ...(options.meshPrefix ? { meshPrefix: options.meshPrefix } : {}) };
}
