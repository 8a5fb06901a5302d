import { createHash, randomBytes } from 'node:crypto';
import { constants, mkdirSync, readdirSync, renameSync, rmdirSync, statSync, unlinkSync, utimesSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { ArchiveObjects } from './objects.js';
import { digestMismatch } from './digest.js';
import { ArchiveRefused } from './refusal.js';

const FETCHING = '.fetch-';
/** Silence from the store this long while an object streams in ends the fetch: a server gone mid-stream. */
const IDLE_MS = 30_000;

/**
 * Verified archives kept in the state directory (archives/<sha256>, 0600), so that drift is restored
 * without the link and a re-delivery of the same archive fetches nothing. Bounded: archives no
 * journal names go at once, and the oldest beyond the size bound go after them (then drift of theirs
 * is restored by fetching again). Downloads stream into a temporary file beside them; it becomes a
 * kept archive only once verified and read whole without refusal.
 */
export class ArchiveCache {
  readonly dir: string;

  constructor(stateDir: string) {
    this.dir = join(stateDir, 'archives');
  }

  /** A kept archive of this digest, or undefined. */
  kept(sha256: string): string | undefined {
    const path = join(this.dir, sha256);
    try {
      return statSync(path).isFile() ? path : undefined;
    } catch {
      return undefined;
    }
  }

  /** Marks a kept archive as used now (the bound lets the least recently used go first). */
  touch(path: string): void {
    const now = new Date();
    utimesSync(path, now, now);
  }

  private ensureDir(): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
  }

  /**
   * Streams an object into a temporary file, hashing as it goes; refuses a missing object, a store
   * gone mid-stream, and bytes whose sha256 is not the declared one (naming both). The caller admits
   * the file or discards it.
   */
  async fetch(objects: ArchiveObjects, name: string, sha256: string): Promise<string> {
    this.ensureDir();
    this.removeLeftovers();
    let data: AsyncIterable<Uint8Array> | undefined;
    try {
      data = await objects.read(name);
    } catch (err) {
      if (err instanceof ArchiveRefused) throw err;
      throw new ArchiveRefused('fetch-failed', `object '${name}' cannot be read from the archive store: ${(err as Error).message}`);
    }
    if (!data) throw new ArchiveRefused('fetch-failed', `object '${name}' is not in the archive store`);
    const temporary = join(this.dir, `${FETCHING}${randomBytes(6).toString('hex')}`);
    const handle = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    const hash = createHash('sha256');
    try {
      for await (const chunk of withIdleLimit(data, IDLE_MS)) {
        hash.update(chunk);
        await handle.write(chunk);
      }
    } catch (err) {
      await handle.close();
      this.discard(temporary);
      throw new ArchiveRefused('fetch-failed', `object '${name}' could not be fetched whole: ${(err as Error).message.replace(/\s*\n\s*/g, '; ')}; nothing was unpacked`);
    }
    await handle.close();
    const actual = hash.digest('hex');
    if (actual !== sha256) {
      this.discard(temporary);
      throw digestMismatch(`object '${name}'`, sha256, actual);
    }
    return temporary;
  }

  /** A verified, admitted download becomes the kept archive of its digest. */
  admit(temporary: string, sha256: string): string {
    const path = join(this.dir, sha256);
    renameSync(temporary, path);
    return path;
  }

  /** Removes a file of the cache, and the cache's folder when that leaves it empty (a refusal leaves nothing). */
  discard(path: string): void {
    try {
      unlinkSync(path);
    } catch {
      // gone already
    }
    try {
      rmdirSync(this.dir);
    } catch {
      // other archives are kept
    }
  }

  /** Under the lock, any download in progress is a leftover of a run that ended mid-fetch. */
  private removeLeftovers(): void {
    for (const name of readdirSync(this.dir)) if (name.startsWith(FETCHING)) this.discard(join(this.dir, name));
  }

  /** Keeps only archives in use, and of those the most recently used within the bound. */
  prune(inUse: ReadonlySet<string>, maxBytes: number): void {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    const kept: Array<{ path: string; size: number; used: number }> = [];
    for (const name of names) {
      if (name.startsWith(FETCHING)) continue;
      const path = join(this.dir, name);
      if (!inUse.has(name)) {
        this.discard(path);
        continue;
      }
      const st = statSync(path);
      kept.push({ path, size: st.size, used: st.mtimeMs });
    }
    kept.sort((a, b) => b.used - a.used);
    let total = 0;
    for (const k of kept) {
      total += k.size;
      if (total > maxBytes) this.discard(k.path);
    }
  }
}

/** An async iterable that fails when no value arrives within ms. */
async function* withIdleLimit<T>(source: AsyncIterable<T>, ms: number): AsyncIterable<T> {
  const iterator = source[Symbol.asyncIterator]();
  try {
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const idle = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the store sent nothing for ${ms / 1000} s`)), ms);
      });
      try {
        const next = await Promise.race([iterator.next(), idle]);
        if (next.done) return;
        yield next.value;
      } finally {
        clearTimeout(timer);
      }
    }
  } finally {
    void iterator.return?.();
  }
}

