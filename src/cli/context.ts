import type { Flags } from './args.js';
import type { CommandRunner } from '../system/runner.js';
import type { Clock } from '../system/clock.js';
import type { Logger } from '../system/log.js';

export { DEFAULT_CONFIG, DEFAULT_STATE_DIR } from '../system/layout.js';

/** Everything a command needs, passed in: nothing reaches for a module-level singleton. */
export interface CommandContext {
  args: string[];
  flags: Flags;
  json: boolean;
  log: Logger;
  runner: CommandRunner;
  clock: Clock;
  /** Writes command output (never logs) to stdout. */
  print(text: string): void;
}

export function stringFlag(flags: Flags, name: string): string | undefined {
  const value = flags[name];
  return typeof value === 'string' ? value : undefined;
}

/** Prints a document: JSON under --json, the readable form otherwise. */
export function output(ctx: CommandContext, value: unknown, readable: () => string): void {
  ctx.print(ctx.json ? JSON.stringify(value, null, 2) : readable());
}
