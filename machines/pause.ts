/**
 * A host paused by hand (`mesh-host pause`): it applies nothing until resumed, or until `until`. Kept in
 * the store's head, carried by every heartbeat and status answer. A plain record: the lifecycle decides
 * with it, the store keeps it, the fleet view shows it.
 */
export interface Pause {
  /** Why, as the operator said it. */
  reason: string;
  /** Who asked: the user behind sudo, else the user, else `uid N`. */
  by: string;
  /** When it was asked (ISO time). */
  since: string;
  /**
   * When it ends by itself (ISO time, by the host's wall clock as it read at the pause); absent, it lasts
   * until `mesh-host resume`. A wall-clock end is stored because the pause must outlive a restart; within
   * the boot it was asked in, `ends` decides instead, so that a step of the wall clock neither ends it
   * early nor holds it longer.
   */
  until?: string;
  /** The same end on the machine's boot clock (its boot, and the reading at which it ends): set with `until`. */
  ends?: BootReading;
}

/**
 * A reading of the machine's clock since its boot (CLOCK_BOOTTIME: it counts a suspend, and no step of
 * the wall clock moves it), with the boot it is of: comparable between processes of one boot only.
 */
export interface BootReading {
  bootId: string;
  ms: number;
}

/**
 * The boot clock's reading, or the teller's way to read it: read only for a pause that carries its end by
 * the boot clock, so that a host with no timed pause never asks (a daemon asks on every delivery).
 */
export type BootReader = BootReading | (() => BootReading);

/**
 * How long until the pause's end, by the boot clock when the pause was asked in this boot, else by the
 * wall clock (after a reboot there is nothing else: a step made while the machine was down moves the end).
 */
function msLeft(until: string, ends: BootReading | undefined, nowMs: number, reader: BootReader | undefined): number {
  const boot = ends && (typeof reader === 'function' ? reader() : reader);
  if (ends && boot && ends.bootId === boot.bootId) return ends.ms - boot.ms;
  return Date.parse(until) - nowMs;
}

/** The pause as it stands at nowMs (and the boot clock's reading, when the teller has one): none when there is none or its end has passed. */
export function pauseAt(pause: Pause | undefined | null, nowMs: number, boot?: BootReader): Pause | null {
  if (!pause) return null;
  if (pause.until !== undefined && msLeft(pause.until, pause.ends, nowMs, boot) <= 0) return null;
  return pause;
}

/** A pause as the lifecycle is told it: the pause, and in how long it ends by itself (by the teller's clock). */
export interface PauseOrder {
  pause: Pause;
  endsInMs?: number;
}

/** The order for the pause standing at nowMs, or undefined when none stands. */
export function pauseOrderAt(pause: Pause | undefined | null, nowMs: number, boot?: BootReader): PauseOrder | undefined {
  const standing = pauseAt(pause, nowMs, boot);
  if (!standing) return undefined;
  return { pause: standing, ...(standing.until === undefined ? {} : { endsInMs: msLeft(standing.until, standing.ends, nowMs, boot) }) };
}

/** One line for a pause: who, since when, until when, why. */
export function pauseText(pause: Pause): string {
  return `paused by ${pause.by} since ${pause.since}${pause.until ? ` until ${pause.until}` : ''}: ${pause.reason}`;
}
