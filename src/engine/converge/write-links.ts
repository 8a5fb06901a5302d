import { closeSync, constants, fstatSync, writeSync, type Stats } from 'node:fs';
import { fchmodAsync, fchownAsync, fsyncAsync, lchownAsync, linkAsync, lstatAsync, openAsync, readFileAsync, renameAsync, symlinkAsync, unlinkAsync } from './fd-calls.js';
import type { RootedFs } from './rooted-fs.js';

/** A symbolic link to make: its text is written as given, never resolved or followed here. */
export interface SymlinkOp {
  path: string;
  target: string;
  uid: number;
  gid: number;
  temporary: string;
}

/** A second name for a file already made (a hard link), or a copy of it when the file system refuses. */
export interface HardLinkOp {
  path: string;
  /** The declared path of the file it names. */
  existing: string;
  temporary: string;
}

/** What a file system answers when it will not make a hard link there. */
const NO_HARD_LINK = new Set(['EPERM', 'EMLINK', 'EXDEV', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/**
 * Makes a symbolic link at a declared path: a new link under a temporary name beside it (symlink
 * fails on anything standing there), its owner set without following it, renamed over the name (a
 * link, a file, or nothing: the rename replaces the name itself, never what a link there points to).
 * The directory's fsync is the batch's. Returns the link's own lstat.
 */
export function writeSymlink(fs: RootedFs, op: SymlinkOp): Promise<Stats> {
  return fs.withParent(op.path, async (at, atName) => {
    const temporary = atName(op.temporary);
    await symlinkAsync(op.target, temporary);
    try {
      await lchownAsync(temporary, op.uid, op.gid);
      await renameAsync(temporary, at);
    } catch (err) {
      await unlinkAsync(temporary).catch(() => undefined);
      throw err;
    }
    return lstatAsync(at);
  });
}

/**
 * Gives a file already made a second name: linked under a temporary name (link never follows the
 * name it links, so a link standing at the file's place is linked as a link, never its target), then
 * renamed over the name. Where the file system will not link, the file's content is copied instead,
 * with its mode and owner. Returns the new name's stat and whether it is a copy.
 */
export function writeHardLink(fs: RootedFs, op: HardLinkOp): Promise<{ st: Stats; copied: boolean }> {
  return fs.withParent(op.existing, (existing) =>
    fs.withParent(op.path, async (at, atName) => {
      const temporary = atName(op.temporary);
      let copied = false;
      try {
        await linkAsync(existing, temporary);
      } catch (err) {
        if (!NO_HARD_LINK.has((err as NodeJS.ErrnoException).code ?? '')) throw err;
        await copyFile(existing, temporary);
        copied = true;
      }
      try {
        await renameAsync(temporary, at);
      } catch (err) {
        await unlinkAsync(temporary).catch(() => undefined);
        throw err;
      }
      return { st: await lstatAsync(at), copied };
    }),
  );
}

/** A copy of a regular file (never through a link) under a fresh name, with its mode and owner, fsynced. */
async function copyFile(from: string, to: string): Promise<void> {
  const source = await openAsync(from, constants.O_RDONLY | constants.O_NOFOLLOW);
  let content: Buffer;
  let st: Stats;
  try {
    st = fstatSync(source);
    if (!st.isFile()) throw new Error(`${from} is not a regular file`);
    content = await readFileAsync(source);
  } finally {
    closeSync(source);
  }
  const fd = await openAsync(to, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    let written = 0;
    while (written < content.length) written += writeSync(fd, content, written, content.length - written);
    await fchownAsync(fd, st.uid, st.gid);
    await fchmodAsync(fd, st.mode & 0o7777);
    await fsyncAsync(fd);
  } catch (err) {
    closeSync(fd);
    await unlinkAsync(to).catch(() => undefined);
    throw err;
  }
  closeSync(fd);
}
