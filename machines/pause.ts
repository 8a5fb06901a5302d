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
  /** When it ends by itself (ISO time); absent, it lasts until `mesh-host resume`. */
  until?: string;
}

/** The pause as it stands at nowMs: none when there is none or its end has passed. */
export function pauseAt(pause: Pause | undefined | null, nowMs: number): Pause | null {
  if (!pause) return null;
  if (pause.until !== undefined && Date.parse(pause.until) <= nowMs) return null;
  return pause;
}

/** A pause as the lifecycle is told it: the pause, and in how long it ends by itself (by the teller's clock). */
export interface PauseOrder {
  pause: Pause;
  endsInMs?: number;
}

/** The order for the pause standing at nowMs, or undefined when none stands. */
export function pauseOrderAt(pause: Pause | undefined | null, nowMs: number): PauseOrder | undefined {
  const standing = pauseAt(pause, nowMs);
  if (!standing) return undefined;
  return { pause: standing, ...(standing.until === undefined ? {} : { endsInMs: Date.parse(standing.until) - nowMs }) };
}

/** One line for a pause: who, since when, until when, why. */
export function pauseText(pause: Pause): string {
  return `paused by ${pause.by} since ${pause.since}${pause.until ? ` until ${pause.until}` : ''}: ${pause.reason}`;
}
