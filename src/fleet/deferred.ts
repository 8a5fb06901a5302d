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
