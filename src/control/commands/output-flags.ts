import { stringFlag, type CommandContext } from '../../cli/context.js';
import { usageError } from '../../core/system/errors.js';
import type { ReportFilter } from '../fleet/report-lines.js';

/**
 * Whether to print lines a person reads: on a terminal, or asked with --text; never under --json. What
 * a pipe got before (JSON) it still gets, so scripts that read it keep working.
 */
export const readable = (ctx: CommandContext): boolean => !ctx.json && (ctx.flags.text === true || process.stdout.isTTY === true);

const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/**
 * `--since 7d` (that long ago), `--since 2026-12-01` (that day, UTC), `--since 2026-12-01T09:00` or any
 * ISO time: the moment, in ms.
 */
export function momentFlag(ctx: CommandContext, name: string): number | undefined {
  const text = stringFlag(ctx.flags, name);
  if (text === undefined) return undefined;
  const ago = /^(\d+)(m|h|d|w)$/.exec(text);
  if (ago) return ctx.clock.now().getTime() - Number(ago[1]) * UNIT_MS[ago[2]!]!;
  const iso = /^\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?)?$/.test(text) ? Date.parse(/T[^Z+-]*$/.test(text) ? `${text}Z` : text) : NaN;
  if (Number.isNaN(iso)) throw usageError(`--${name} ${text}: a time ago (30m, 12h, 7d, 2w), a day (2026-12-01) or a time (2026-12-01T09:00, UTC unless it says)`);
  return iso;
}

/** `--since`, `--until`, `--outcome converged,failed`, `--resource ID|PATH`. */
export function reportFilterFlags(ctx: CommandContext): ReportFilter {
  const outcome = stringFlag(ctx.flags, 'outcome');
  const resource = stringFlag(ctx.flags, 'resource');
  const since = momentFlag(ctx, 'since');
  const until = momentFlag(ctx, 'until');
  const outcomes = outcome?.split(',').map((o) => o.trim());
  const known = ['converged', 'failed', 'refused'];
  const wrong = outcomes?.filter((o) => !known.includes(o)) ?? [];
  if (wrong.length) throw usageError(`--outcome ${outcome}: ${wrong.map((w) => `'${w}'`).join(', ')} is not one of ${known.join(', ')} (joined by commas)`);
  return { ...(since === undefined ? {} : { sinceMs: since }), ...(until === undefined ? {} : { untilMs: until }), ...(outcomes ? { outcomes } : {}), ...(resource === undefined ? {} : { resource }) };
}
