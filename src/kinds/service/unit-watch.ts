import type { Logger } from '../../core/system/log.js';
import type { Finding, Watcher } from '../../engine/converge/watch-finding.js';

/** What one look at a unit tells the watcher; systemd and OpenRC both answer it. */
export interface UnitLook {
  activeState: string;
  subState: string;
  /** Changes on every start (systemd's InvocationID; OpenRC: the daemon's PID). */
  invocationId: string;
  /** Automatic restarts so far (systemd's NRestarts; 0 where the manager does not count them). */
  nRestarts: number;
}

/** Looks at every watched unit at once. */
export type UnitProbe = (units: readonly string[]) => Promise<Map<string, UnitLook>>;

export interface UnitWatchOptions {
  /** The services the mesh asked to run. */
  units: readonly string[];
  probe: UnitProbe;
  /**
   * What the apply that just ended last saw of each unit (its second look, or its plan's read of a unit
   * it left alone). The first look is compared with it: a unit the apply left running and found down
   * (or restarted) since is news, however short the moment between the apply's look and the watcher's.
   * A unit not in it (or no apply at all) is taken as the first look finds it.
   */
  left?: ReadonlyMap<string, UnitLook>;
  /** Between two looks (default 2 s: a unit that leaves running is noticed well within 5 s). */
  intervalMs?: number;
  onFound(found: Finding[]): void;
  /** Once the first look is taken: from then on a unit that leaves running is heard. */
  onWatching?(): void;
  log: Logger;
}

const running = (l: UnitLook) => l.activeState === 'active' || l.activeState === 'reloading' || l.activeState === 'activating';

/** What changed for one unit since the last look, or nothing. */
export function unitChange(unit: string, before: UnitLook, now: UnitLook | undefined): string | undefined {
  if (!now) return `${unit} is gone (the service manager no longer knows it)`;
  if (running(before) && !running(now)) return `${unit} was ${now.activeState}${now.subState && now.subState !== now.activeState ? ` (${now.subState})` : ''}`;
  if (now.nRestarts > before.nRestarts) return `${unit} was restarted by its manager (${now.nRestarts - before.nRestarts} automatic restart${now.nRestarts - before.nRestarts === 1 ? '' : 's'})`;
  if (running(now) && before.invocationId !== '' && now.invocationId !== '' && now.invocationId !== before.invocationId) return `${unit} was restarted (a new invocation)`;
  return undefined;
}

/**
 * Watches the units the mesh asked to run, between applies, by one batched look every couple of
 * seconds: a unit that leaves running (crashed, stopped by hand, restarted by its manager) is said
 * once, and the watcher asks for a reconcile. The first look is compared with what the apply that just
 * ended saw of each unit at its end: a unit it left running that is down by the first look was stopped in
 * between, and is said. A unit the apply could not keep running was down when the apply looked, so it is
 * not news again (it does not become a loop of reconciles).
 */
export function watchUnits(options: UnitWatchOptions): Watcher {
  const { units, probe, log } = options;
  let closed = false;
  let last: ReadonlyMap<string, UnitLook> | undefined = options.left;
  let watching = false;
  let timer: NodeJS.Timeout | undefined;
  const look = async () => {
    if (closed) return;
    try {
      const now = await probe(units);
      if (closed) return;
      if (last) {
        const found: Finding[] = [];
        for (const unit of units) {
          const before = last.get(unit);
          const message = before ? unitChange(unit, before, now.get(unit)) : undefined;
          if (message) found.push({ kind: 'unit', target: unit, message });
        }
        if (found.length > 0) options.onFound(found);
      }
      last = now;
      if (!watching) {
        watching = true;
        options.onWatching?.();
      }
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'watch: the units could not be looked at; trying again');
    }
    if (!closed) timer = setTimeout(() => void look(), options.intervalMs ?? 2000);
  };
  if (units.length > 0) void look();
  return {
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
    },
  };
}
