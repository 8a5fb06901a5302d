import { DEFAULT_INHIBIT_MAX_MS, type LockNote } from '../../engine/inhibit/defer.js';

/** A restart or replacement a host held off by its resource's lock, as its report says it. */
export interface DeferredSeen {
  resource: string;
  pid: number;
  /** When the lock was taken (its file's time), and when the host goes ahead anyway at the latest. */
  since: string;
  until: string;
}

/** A step held off, in words: `app deferred: locked by PID 4242 since T, at most until U`. */
export const deferredText = (d: DeferredSeen): string => `${d.resource} deferred: locked by PID ${d.pid} since ${d.since}, at most until ${d.until}`;

/**
 * The steps a report held off by their locks. A host that does not say until when at most (one older
 * than that field) is taken to wait the default bound from when it first held the step off.
 */
export function deferredOf(steps: unknown): DeferredSeen[] {
  if (!Array.isArray(steps)) return [];
  return steps.flatMap((s: { status?: unknown; resource?: unknown; lock?: Partial<Extract<LockNote, { state: 'held' }>> }) => {
    const lock = s?.lock;
    if (s?.status !== 'deferred' || typeof s.resource !== 'string' || lock?.state !== 'held' || typeof lock.pid !== 'number' || typeof lock.since !== 'string') return [];
    const untilMs = typeof lock.until === 'string' ? Date.parse(lock.until) : Date.parse(lock.waitingSince ?? lock.since) + DEFAULT_INHIBIT_MAX_MS;
    return Number.isNaN(untilMs) ? [] : [{ resource: s.resource, pid: lock.pid, since: lock.since, until: new Date(untilMs).toISOString() }];
  });
}
