import type { LockLook, LockReader } from './inhibit-lock.js';

/** How long a restart or replacement waits for its lock when the resource does not say: ten minutes. */
export const DEFAULT_INHIBIT_MAX_MS = 600_000;

/** What a resource says of its lock (a service's or a container's fields). */
export interface Inhibited {
  inhibitWhile?: string;
  inhibitMaxMs?: number;
}

/**
 * A restart or replacement held off, as the store keeps it on the resource's record until it is done
 * or no longer due: since when it waits, for which lock, how long it may, and (a restart) for which
 * changed resources.
 */
export interface Waiting {
  since: string;
  lock: string;
  maxMs: number;
  because?: string[];
  /** The holder, and when the lock was last found held (an apply's own time): what this apply held off is what the host watches. */
  pid: number;
  checked: string;
}

/**
 * The resources named in restartOn that ask for a restart now: changed by this apply, or by an earlier one
 * whose restart the lock held off (still due while the newest declaration names them).
 */
export const restartDue = (restartOn: readonly string[] | undefined, changed: { has(id: string): boolean }, waiting: Waiting | undefined): string[] =>
  (restartOn ?? []).filter((id) => changed.has(id) || waiting?.because?.includes(id) === true);

/**
 * What the lock did to a step, as the report carries it: `held` (the step is deferred, at the latest
 * until `until`, when its bound is reached and it goes ahead anyway), `stale` (the
 * holder is gone: ignored), `overdue` (held past the resource's bound: the step went ahead anyway),
 * `released` (the step waited, and went ahead once the lock was let go).
 */
export type LockNote =
  | { state: 'held'; path: string; pid: number; since: string; waitingSince: string; until: string }
  | { state: 'stale'; path: string; pid?: number; why: 'dead' | 'unreadable' }
  | { state: 'overdue'; path: string; pid: number; since: string; waitingSince: string; maxMs: number }
  | { state: 'released'; path: string; waitingSince: string };

/** Whether the step goes now, and what the lock did to it (nothing to say when it has no lock and waited for none). */
export type Gate = { go: true; note?: LockNote } | { go: false; note: Extract<LockNote, { state: 'held' }>; waiting: Waiting };

/**
 * Whether a step that would interrupt the resource (a restart, a replacement) may be taken now: not
 * while its lock is held by a live holder, unless it has waited its bound already. `waiting` is what
 * the store kept of an earlier wait: the bound counts from the first time it was held off.
 */
export function gateOf(r: Inhibited, waiting: Waiting | undefined, read: LockReader, now: string, because?: string[]): Gate {
  const path = r.inhibitWhile;
  if (path === undefined) return { go: true };
  const look: LockLook = read(path);
  const waitingSince = waiting?.since ?? now;
  if (look.kind === 'free') return waiting ? { go: true, note: { state: 'released', path, waitingSince } } : { go: true };
  if (look.kind === 'stale') return { go: true, note: { state: 'stale', path, ...(look.pid !== undefined ? { pid: look.pid } : {}), why: look.why } };
  const maxMs = r.inhibitMaxMs ?? DEFAULT_INHIBIT_MAX_MS;
  if (Date.parse(now) - Date.parse(waitingSince) >= maxMs) return { go: true, note: { state: 'overdue', path, pid: look.pid, since: look.since, waitingSince, maxMs } };
  return {
    go: false,
    note: { state: 'held', path, pid: look.pid, since: look.since, waitingSince, until: new Date(Date.parse(waitingSince) + maxMs).toISOString() },
    waiting: { since: waitingSince, lock: path, maxMs, ...(because && because.length > 0 ? { because } : {}), pid: look.pid, checked: now },
  };
}

/** What a check says of a step its lock touched: the note, and its words beside the step. */
export const lockSaid = (note: LockNote | undefined): { lock?: LockNote; detail?: string } => (note ? { lock: note, detail: lockWords(note) } : {});

/** The words of a lock's note, said beside its step. */
export function lockWords(note: LockNote): string {
  switch (note.state) {
    case 'held':
      return `deferred: locked by PID ${note.pid} since ${note.since} (${note.path}; held off since ${note.waitingSince}, at most until ${note.until})`;
    case 'stale':
      return `the lock ${note.path} is stale (${note.why === 'dead' ? `PID ${note.pid} is not alive` : 'no PID could be read from it'}): ignored`;
    case 'overdue':
      return `the lock ${note.path} (PID ${note.pid} since ${note.since}) held this off since ${note.waitingSince}, past its bound of ${note.maxMs} ms: done anyway`;
    case 'released':
      return `held off since ${note.waitingSince} by the lock ${note.path}, done once it was released`;
  }
}
