import { resolve } from 'node:path';
import type { HostPaths } from '../env/host-paths.js';
import { openHost, type OpenHost } from '../env/open-host.js';
import { DEFAULT_CONFIG, DEFAULT_STATE_DIR, stringFlag, type CommandContext } from '../../cli/context.js';

/** The host's paths, as the command line names them. */
export function hostPaths(ctx: CommandContext): HostPaths {
  return {
    stateDir: resolve(stringFlag(ctx.flags, 'state-dir') ?? DEFAULT_STATE_DIR),
    configPath: resolve(stringFlag(ctx.flags, 'config') ?? DEFAULT_CONFIG),
    root: resolve(stringFlag(ctx.flags, 'root') ?? '/'),
  };
}

/** Runs a command against the host opened under its lock (waiting for it as long as the configuration says, unless told). */
export function withHost<T>(ctx: CommandContext, command: string, run: (host: OpenHost) => Promise<T>, options: { lockTimeoutMs?: number } = {}): Promise<T> {
  return openHost(hostPaths(ctx), ctx, command, run, options);
}
