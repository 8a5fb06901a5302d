import type { Flags } from './args.js';
import type { CommandRunner } from '../core/system/runner.js';
import type { Clock } from '../core/system/clock.js';
import type { Logger } from '../core/system/log.js';
import { usageError } from '../core/system/errors.js';

export { DEFAULT_CONFIG, DEFAULT_STATE_DIR } from '../core/system/default-paths.js';

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

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--timeout 10s` (also `500ms`, `2m`, `4h`, `1d`, or plain seconds) in milliseconds. */
export function durationFlag(ctx: CommandContext, name: string, fallbackMs: number): number {
  const text = stringFlag(ctx.flags, name);
  if (text === undefined) return fallbackMs;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text);
  if (!m || Number(m[1]) <= 0) throw usageError(`--${name} ${text}: a duration such as 10s, 500ms, 2m, 4h or 1d`);
  return Number(m[1]) * UNIT_MS[m[2] ?? 's']!;
}
