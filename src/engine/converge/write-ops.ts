import { closeSync, constants, fstatSync, writeSync, type Stats } from 'node:fs';
import { fchmodAsync, fchownAsync, openAsync, renameAsync, rmdirAsync, unlinkAsync, writeAsync } from './fd-calls.js';
import { FaultError } from '../../core/system/errors.js';
import { MissingDirectory, PathRefused, type RootedFs } from './rooted-fs.js';
import type { HardLinkOp, SymlinkOp } from './write-links.js';

/** Mode and owner a write leaves on what it makes. */
export interface Meta {
  mode: number;
  uid: number;
  gid: number;
}

/** What a file or directory the host takes over was, and for a file where its content is kept. */
export interface TakenOriginal {
  mode: number;
  uid: number;
  gid: number;
  /** The kept copy of a file's content (an absolute path under the state directory). */
  copy?: string;
}

/** One write a batch stages, as the commit carries it out. */
export type Op =
  | { kind: 'file'; path: string; bytes: Uint8Array; meta: Meta; creates: boolean; temporary: string; original?: TakenOriginal }
  | { kind: 'mkdir'; path: string; meta: Meta }
  | { kind: 'meta'; path: string; meta: Meta; directory: boolean; original?: TakenOriginal }
  | { kind: 'unlink'; path: string }
  | { kind: 'rmdir'; path: string }
  | ({ kind: 'hardlink' } & HardLinkOp)
  | ({ kind: 'symlink' } & SymlinkOp);

/** Content up to this size is written in line; larger files are written on libuv's threads. */
const IN_LINE_BYTES = 256 << 10;

/**
 * A file's temporary made (O_EXCL|O_NOFOLLOW, through the pinned directory) and written whole, owner
 * and mode set; left open for the fsync that comes once every temporary of its wave is written (see
 * Commit). Every call that changes the directory or the inode (the creation, owner, mode) goes to
 * libuv's threads: each may wait on the file system's journal, and waiting in line stalled the event
 * loop. The write of small content (page cache only) stays in line. On a failure the temporary goes.
 */
export async function writeTemporary(fs: RootedFs, op: Extract<Op, { kind: 'file' }>): Promise<number> {
  return fs.withParent(op.path, async (_at, atName) => {
    const temporary = atName(op.temporary);
    const fd = await openAsync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      let written = 0;
      const inLine = op.bytes.length <= IN_LINE_BYTES;
      while (written < op.bytes.length) {
        written += inLine ? writeSync(fd, op.bytes, written, op.bytes.length - written) : (await writeAsync(fd, op.bytes, written, op.bytes.length - written)).bytesWritten;
      }
      await fchownAsync(fd, op.meta.uid, op.meta.gid);
      await fchmodAsync(fd, op.meta.mode);
      return fd;
    } catch (err) {
      closeSync(fd);
      await unlinkAsync(temporary).catch(() => undefined); // else named by the intent: the next start removes it
      throw err;
    }
  });
}

/**
 * The fsynced temporary renamed over its name and closed; its stat, taken after the rename (a rename
 * changes the inode's ctime, which the next apply compares). A failed rename removes the temporary.
 */
export async function renameTemporary(fs: RootedFs, op: Extract<Op, { kind: 'file' }>, fd: number): Promise<Stats> {
  try {
    await fs.withParent(op.path, (at, atName) => renameAsync(atName(op.temporary), at));
    return fstatSync(fd);
  } catch (err) {
    await dropTemporary(fs, op);
    throw err;
  } finally {
    closeSync(fd);
  }
}

/** A written temporary whose resource failed: removed, never renamed (else named by the intent: the next start removes it). */
export async function dropTemporary(fs: RootedFs, op: Extract<Op, { kind: 'file' }>, fd?: number): Promise<void> {
  if (fd !== undefined) closeSync(fd);
  await fs.withParent(op.path, (_at, atName) => unlinkAsync(atName(op.temporary))).catch(() => undefined);
}

/** Mode and owner set in place, the descriptor left open for the wave's fsync. */
export async function setMetaOp(fs: RootedFs, op: Extract<Op, { kind: 'meta' }>): Promise<number> {
  return fs.withParent(op.path, async (at) => {
    const fd = await openAsync(at, op.directory ? constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW : constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      await fchownAsync(fd, op.meta.uid, op.meta.gid);
      await fchmodAsync(fd, op.meta.mode);
      return fd;
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  });
}

/** What a failed resource made in the batch goes again, the latest first (a file before its directory). */
export async function takeBack(fs: RootedFs, made: readonly Op[]): Promise<void> {
  for (const op of [...made].reverse()) {
    try {
      if (op.kind === 'file') await fs.withParent(op.path, (at) => unlinkAsync(at));
      else if (op.kind === 'mkdir') await fs.withParent(op.path, (at) => rmdirAsync(at));
      fs.forgetDirectory(op.path);
    } catch {
      // Still named by the intent: the next start takes it back.
    }
  }
}

/** Runs work over items with at most `parallel` in flight; a failure goes to onError, the rest go on. */
export async function pool<T>(parallel: number, items: T[], work: (item: T) => Promise<void>, onError: (item: T, err: unknown) => void): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (err) {
        onError(item, err);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, items.length) }, lane));
}

const VERB: Record<Op['kind'], string> = {
  file: 'write', mkdir: 'make the directory', meta: 'set mode and owner of', unlink: 'remove', rmdir: 'remove the directory', hardlink: 'link', symlink: 'make the symbolic link',
};

/** An op's failure, naming its path: "could not write /etc/a.conf (EIO: i/o error, fsync)". */
export function describeFailure(op: Op, err: unknown): Error {
  if (err instanceof PathRefused || err instanceof MissingDirectory) return err;
  const code = (err as NodeJS.ErrnoException).code;
  const message = `could not ${VERB[op.kind]} ${op.path} (${systemReason(err)})`;
  return typeof code === 'string' ? new FaultError(message, { code, path: op.path }) : new Error(message);
}

/**
 * A system error as an operator reads it: its code and what it means, without the call and the path the
 * call named (the host reaches a path through a descriptor, "/proc/self/fd/19/app", which is no
 * place on the machine; the declared path is said beside it).
 */
export function systemReason(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (!e.code || !e.syscall) return e.message ?? String(err);
  const cut = e.message.indexOf(`, ${e.syscall}`);
  return cut > 0 ? e.message.slice(0, cut) : e.message;
}

export const codeOf = (err: unknown) => (err as NodeJS.ErrnoException).code ?? (err as Error).message;
export const isMissing = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';
export const isNotEmpty = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOTEMPTY' || (err as NodeJS.ErrnoException).code === 'EEXIST';
