import { userInfo } from 'node:os';
import { pauseAt, pauseText, type Pause } from '../../../machines/pause.js';
import type { StoreState } from '../../core/store/state.js';
import type { Clock } from '../../core/system/clock.js';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import { durationFlag, output, stringFlag, type CommandContext } from '../../cli/context.js';
import { withHost } from './with-host.js';


/** A pause's end runs on a timer: Node's timers hold up to 2^31 - 1 ms, so a pause with an end is at most 24 days. */
const LONGEST_PAUSE_MS = 24 * 86_400_000;
/** Asked while an apply runs, the pause waits for it to end (it takes the lock after it), up to this long. */
const WAIT_FOR_APPLY_MS = 15 * 60_000;

/**
 * Who runs the command: the user behind sudo, else the user the environment names, else the account's
 * name for the uid (a root shell without USER, a unit), else the uid itself.
 */
export function askedBy(env: NodeJS.ProcessEnv, uid: number | undefined, accountName: () => string | undefined = thisAccount): string {
  return env.SUDO_USER || env.USER || accountName() || `uid ${uid ?? 'unknown'}`;
}

/** The name of the account this process runs as, as the system's user database says it; undefined when it has none. */
function thisAccount(): string | undefined {
  try {
    return userInfo().username || undefined;
  } catch {
    return undefined;
  }
}

/**
 * `mesh-host pause --reason TEXT [--for DURATION]`: the host stands aside from applying. Saved in the
 * store's head under the lock (after an apply in flight, never in its middle); a running daemon hears
 * of it from the store, keeps what the mesh sends (the newest wins) and applies it at the resume. Asked
 * again, it replaces the pause standing.
 */
export async function pauseCommand(ctx: CommandContext): Promise<number> {
  const reason = stringFlag(ctx.flags, 'reason')?.trim();
  if (!reason) throw usageError("'pause' needs --reason TEXT: why, for whoever finds the host paused");
  const forMs = ctx.flags.for === undefined ? undefined : durationFlag(ctx, 'for', 0);
  if (forMs !== undefined && forMs > LONGEST_PAUSE_MS) throw usageError(`--for ${String(ctx.flags.for)}: at most 24d; without --for the pause lasts until 'mesh-host resume'`);
  return withHost(ctx, 'pause', async (host) => {
    const now = ctx.clock.now();
    const boot = ctx.clock.boot();
    // --for is a duration: its end is kept on the boot clock too, which no step of the wall clock moves (see Pause).
    const ends = forMs === undefined ? {} : { until: new Date(now.getTime() + forMs).toISOString(), ends: { bootId: boot.bootId, ms: boot.ms + forMs } };
    const pause: Pause = { reason, by: askedBy(process.env, process.getuid?.()), since: now.toISOString(), ...ends };
    const before = pauseAt(host.store.state.pause, now.getTime(), boot);
    host.store.updateHead((s) => void (s.pause = pause));
    host.store.save();
    output(ctx, { paused: pause, replaced: before }, () => [...(before ? [`replaces: ${pauseText(before)}`] : []), pauseText(pause)].join('\n'));
    return EXIT.ok;
  }, { lockTimeoutMs: WAIT_FOR_APPLY_MS });
}

/** `mesh-host resume`: the pause removed; a running daemon applies at once what waited. */
export async function resumeCommand(ctx: CommandContext): Promise<number> {
  return withHost(ctx, 'resume', async (host) => {
    const was = host.store.state.pause;
    const standing = pauseAt(was, ctx.clock.now().getTime(), ctx.clock.boot());
    if (was) {
      host.store.updateHead((s) => delete s.pause);
      host.store.save();
    }
    const text = !was ? 'not paused: nothing to resume' : standing ? `resumed; it was ${pauseText(standing)}` : `the pause had ended by itself at ${was.until}; removed`;
    output(ctx, { resumed: standing !== null, was: was ?? null }, () => text);
    return EXIT.ok;
  }, { lockTimeoutMs: WAIT_FOR_APPLY_MS });
}

/** A command that applies by hand (`apply`, `reconcile`) is refused while the host is paused: the pause is the operator's word. */
export function refuseWhilePaused(state: Readonly<StoreState>, clock: Pick<Clock, 'now' | 'boot'>, dryRun: boolean): void {
  const pause = pauseAt(state.pause, clock.now().getTime(), clock.boot());
  if (!pause || dryRun) return;
  throw refused(`this host is ${pauseText(pause)}`, ["'mesh-host resume' first (or --dry-run to see the plan)"], 'state');
}
