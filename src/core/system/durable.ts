import { closeSync, constants, fsync, fsyncSync, mkdirSync, openSync, rename, renameSync, unlinkSync, write, writeSync } from 'node:fs';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';

/** The prefix of a temporary save beside its target; leftovers are found by it at start. */
export function temporaryPrefix(target: string): string {
  return `${basename(target)}.tmp-`;
}

/** Whether a name is one of this file's temporaries (`NAME.tmp-PID-RANDOM`): a crash may leave one. */
export function isTemporary(name: string): boolean {
  return /\.tmp-\d+-[0-9a-f]{12}$/.test(name);
}

/**
 * Writes bytes so that a crash at any instant leaves the old file or the new one, never a torn one:
 * a fresh temporary file in the same directory (O_EXCL|O_NOFOLLOW, so a planted name cannot redirect
 * it), written, fsynced, renamed over the target, and the directory fsynced so the rename survives.
 * Synchronous on purpose: one writer, saves in order, nothing interleaves.
 */
export function writeDurably(target: string, bytes: Uint8Array, mode = 0o600): void {
  const dir = dirname(target);
  const temporary = join(dir, `${temporaryPrefix(target)}${process.pid}-${randomBytes(6).toString('hex')}`);
  const fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  let renamed = false;
  try {
    let written = 0;
    while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(temporary, target);
    renamed = true;
    fsyncDirectory(dir);
  } catch (err) {
    if (!renamed) {
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
      try {
        unlinkSync(temporary);
      } catch {
        // a leftover is counted and removed at the next start
      }
    }
    throw err;
  }
}

/**
 * writeDurably with the waits (the fsyncs) on libuv's threads, so a daemon keeps answering while a
 * large store reaches the disk. The same discipline: temporary, fsync, rename, directory fsync. When
 * the new file may name something only once another write is durable (the store's head and the
 * report it counts), `renameAfter` is that write: the temporary is written and fsynced beside it, and
 * the rename waits for it; if it rejects, nothing is renamed, the temporary is removed and this rejects
 * with its error (a caller that renames however the other write ends passes a promise that resolves).
 * `renamed` is told once the rename is made, before the directory's fsync makes it durable.
 */
export async function writeDurablyAsync(target: string, bytes: Uint8Array, mode = 0o600, renameAfter?: Promise<unknown>, renamed?: () => void): Promise<void> {
  const dir = dirname(target);
  // Its rejection is this write's, awaited once the temporary is durable: not an unhandled one meanwhile.
  renameAfter?.catch(() => undefined);
  const temporary = join(dir, `${temporaryPrefix(target)}${process.pid}-${randomBytes(6).toString('hex')}`);
  // The quick calls (open, a small write into the page cache, close, rename) are made here: on libuv's
  // threads each cost a thread's wake-up and a turn of the loop, milliseconds on a loaded machine, eight
  // of them a write. Only the waits for the disk (the fsyncs) and a large write go there.
  let fd: number | undefined = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  let done = false;
  try {
    await writeAll(fd, bytes);
    await fsyncOf(fd);
    closeSync(fd);
    fd = undefined;
    await renameAfter;
    renameSync(temporary, target);
    done = true;
    renamed?.();
    await fsyncDirectoryAsync(dir);
  } catch (err) {
    if (!done) {
      if (fd !== undefined) closeQuietly(fd);
      try {
        unlinkSync(temporary);
      } catch {
        // a leftover is counted and removed at the next start
      }
    }
    throw err;
  }
}

/** Writes up to this size go to the page cache from the event loop: a copy of microseconds. */
const SMALL_WRITE = 64 << 10;
const fsyncOf = promisify(fsync);
const writeOf = promisify(write);
const renameOf = promisify(rename);

/**
 * Writes a file whole but not durably: a reader sees the old file or the new one, and a crash may lose
 * both (for what the host keeps for its own convenience: a hint, a copy). The temporary `TARGET.tmp` is
 * opened, written (see writeAll) and closed from the event loop, where each is a call of microseconds;
 * on libuv's threads the three cost a thread's wake-up and a turn of the loop each, every delivery.
 * The rename goes there: the event loop's own renames stay those of the durable writes, in their order.
 */
export async function writeWholeAsync(target: string, bytes: Uint8Array, mode = 0o600): Promise<void> {
  const temporary = `${target}.tmp`;
  const fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, mode);
  try {
    await writeAll(fd, bytes);
  } finally {
    closeSync(fd);
  }
  await renameOf(temporary, target);
}

async function writeAll(fd: number, bytes: Uint8Array): Promise<void> {
  let written = 0;
  if (bytes.length <= SMALL_WRITE) {
    while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
    return;
  }
  while (written < bytes.length) written += (await writeOf(fd, bytes, written, bytes.length - written)).bytesWritten;
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}

/** A directory flushed on libuv's threads (the wait for the disk), so that the event loop keeps serving meanwhile. */
export async function fsyncDirectoryAsync(dir: string): Promise<void> {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await fsyncOf(fd);
  } finally {
    closeSync(fd);
  }
}

export function fsyncDirectory(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * A directory made (with its missing parents) so that its name survives a power cut: each directory
 * made here, and the one the first was made in, fsynced. A file written durably inside a directory whose
 * own entry never reached the disk is lost with it (an archive's journal, whose files on the root were
 * then nobody's). Nothing is flushed when the directory stood already.
 */
export function ensureDirectoryDurably(dir: string, mode = 0o700): void {
  const first = mkdirSync(dir, { recursive: true, mode });
  if (first === undefined) return;
  for (let made = dir; ; made = dirname(made)) {
    fsyncDirectory(dirname(made));
    if (made === first || dirname(made) === made) break;
  }
}
