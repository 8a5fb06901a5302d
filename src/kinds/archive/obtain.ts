import { ArchiveCache } from './cache.js';
import { digestMismatch, sha256Hex, sha256OfFile } from './digest.js';
import type { ArchiveLimits } from '../../core/config/archive-limits.js';
import type { ArchiveBytes } from './archive-read.js';
import { ArchiveRefused } from './refusal.js';
import type { ArchiveObjects, ArchiveObjectsProvider } from './objects.js';
import type { Clock } from '../../core/system/clock.js';

/** What archives need from the host, passed in. */
export interface ArchiveEnv {
  stateDir: string;
  limits: ArchiveLimits;
  /** The archive store over the link; absent when the host has no link (then object sources fail, saying so). */
  objects?: ArchiveObjectsProvider;
  /** Paces the wait for an object still on its way to the store the host reads. */
  clock: Clock;
}

/**
 * How long a fetch waits for its object to be in the store as declared. A site's hosts read a copy of
 * the store that follows the hub's at its own pace, as their copy of the declarations does: after a cut,
 * or for an archive uploaded just before the declaration naming it, the declaration can come first.
 */
export const OBJECT_ARRIVAL_MS = 60_000;
const FIRST_LOOK_AGAIN_MS = 100;
const LONGEST_LOOK_AGAIN_MS = 2_000;

/**
 * In a store that follows another, waits until it describes the object with the declared digest
 * (absent, or an older upload under the same name, it may be on its way), looking again at growing
 * intervals, at most OBJECT_ARRIVAL_MS; the store the uploads go to is not waited on. It decides
 * nothing: the fetch after it refuses what is still missing or different, and a store that cannot be
 * asked is left to the fetch to name.
 */
async function objectArrived(objects: ArchiveObjects, name: string, sha256: string, clock: Clock): Promise<void> {
  const started = clock.monotonic();
  try {
    for (let wait = FIRST_LOOK_AGAIN_MS; ; wait = Math.min(wait * 2, LONGEST_LOOK_AGAIN_MS)) {
      if ((await objects.info(name))?.sha256 === sha256) return;
      if (wait === FIRST_LOOK_AGAIN_MS && !(await objects.follows?.())) return;
      if (clock.monotonic() - started + wait > OBJECT_ARRIVAL_MS) return;
      await clock.sleep(wait);
    }
  } catch {
    return;
  }
}

export type ArchiveSource = { inline: string } | { object: string };

/** Verified bytes, and what to do with them once read: keep a fetched archive, or let it go. */
export interface Obtained {
  bytes: ArchiveBytes;
  /** How the bytes came: for the plan and the report. */
  how: 'inline' | 'kept' | 'fetched';
  /** Called once the archive was read: a fetched one read without refusal is kept, otherwise removed. */
  settle(accepted: boolean): void;
}

const nothing = () => {};

/**
 * The declared archive, verified by sha256 before anything reads an entry of it: inline bytes, the
 * kept copy in the state directory (hashed again before use), or, when `fetch` allows, the object
 * streamed from the archive store. Undefined when only a fetch could give it and fetching is not
 * allowed (a plan fetches nothing).
 */
export async function obtainArchive(env: ArchiveEnv, source: ArchiveSource, sha256: string, fetch: boolean): Promise<Obtained | undefined> {
  if ('inline' in source) {
    const bytes = Buffer.from(source.inline, 'base64');
    const actual = sha256Hex(bytes);
    if (actual !== sha256) throw digestMismatch('the inline archive', sha256, actual);
    return { bytes: { kind: 'bytes', bytes }, how: 'inline', settle: nothing };
  }
  const cache = new ArchiveCache(env.stateDir);
  const kept = cache.kept(sha256);
  if (kept !== undefined) {
    if ((await sha256OfFile(kept)) === sha256) {
      // Marked used only by an apply: a plan writes nothing, not even a time.
      if (fetch) cache.touch(kept);
      return { bytes: { kind: 'file', path: kept }, how: 'kept', settle: nothing };
    }
    if (fetch) cache.discard(kept); // damaged on disk: fetched again below
  }
  if (!fetch) return undefined;
  if (!env.objects) throw new ArchiveRefused('no-link', `object '${source.object}' needs the archive store, and this host has no link configured (no servers)`);
  const objects = await env.objects();
  await objectArrived(objects, source.object, sha256, env.clock);
  const temporary = await cache.fetch(objects, source.object, sha256);
  return {
    bytes: { kind: 'file', path: temporary },
    how: 'fetched',
    settle: (accepted) => (accepted ? cache.admit(temporary, sha256) : cache.discard(temporary)),
  };
}
