import {
  closeSync, constants, fchmodSync, fchownSync, fstatSync, fsyncSync, lstatSync, mkdirSync, openSync,
  readlinkSync, renameSync, rmdirSync, unlinkSync, writeSync, type Stats,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import { readFully } from '../system/read.js';

/** A declared path could not be reached without following a link or crossing a non-directory. */
export class PathRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PathRefused';
  }
}

export type ParentLookup = { kind: 'dir'; fd: number; real: string } | { kind: 'missing'; missing: string };

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const at = (fd: number, name: string) => `/proc/self/fd/${fd}/${name}`;

/**
 * Every declared path, taken inside a root and never through a symbolic link: each directory on the
 * way is opened O_DIRECTORY|O_NOFOLLOW from the one above it, and the last component is reached by
 * /proc/self/fd/DIR/NAME, so a link planted at or above a declared path is refused, not followed, and
 * a directory swapped after it was opened cannot redirect a write. Opened directories are cached for
 * the life of one apply (close() ends it).
 *
 * Reads for the check (lstat, content) go by real paths whose every directory was lstat'd once in this
 * apply and found to be a directory, not a link, with O_NOFOLLOW on the last component: no descriptor
 * is opened for a check (opening through /proc/self/fd costs several plain lookups, and the no-op
 * apply is the hot path), and a declared directory's own lstat serves as its check. Every write goes
 * through pinned descriptors, so a swap after the check can mislead a read, never redirect a write.
 */
export class RootedFs {
  private readonly dirs = new Map<string, { fd: number; real: string }>();
  /** Directories found free of links by lstat in this apply, by declared path: their real paths. */
  private readonly checked = new Map<string, string>();

  constructor(readonly root: string) {}

  /** The directory holding a declared path, opened; or the first missing directory on the way. */
  parent(path: string): ParentLookup {
    return this.directory(posix.dirname(path));
  }

  private realOf(dir: string): string {
    return dir === '/' ? this.root : `${this.root === '/' ? '' : this.root}${dir}`;
  }

  /** For a read: the real path of the directory holding a declared path, every directory on the way checked once. */
  private readable(path: string): { kind: 'dir'; real: string } | { kind: 'missing'; missing: string } {
    return this.checkedDirectory(posix.dirname(path));
  }

  private checkedDirectory(dir: string): { kind: 'dir'; real: string } | { kind: 'missing'; missing: string } {
    const known = this.checked.get(dir) ?? this.dirs.get(dir)?.real;
    if (known !== undefined) return { kind: 'dir', real: known };
    if (dir === '/') return { kind: 'dir', real: this.root };
    const up = this.checkedDirectory(posix.dirname(dir));
    if (up.kind !== 'dir') return up;
    const real = this.realOf(dir);
    let st: Stats;
    try {
      st = lstatSync(real);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing', missing: dir };
      throw err;
    }
    this.refuseUnlessDirectory(dir, st, real);
    this.checked.set(dir, real);
    return { kind: 'dir', real };
  }

  private refuseUnlessDirectory(dir: string, st: Stats, real: string): void {
    if (st.isSymbolicLink()) throw new PathRefused(`${dir} is a symbolic link (to ${this.readlinkAt(real)}), not followed`);
    if (!st.isDirectory()) throw new PathRefused(`${dir} is not a directory`);
  }

  private readlinkAt(real: string): string {
    try {
      return readlinkSync(real);
    } catch {
      return '?';
    }
  }

  private directory(dir: string): ParentLookup {
    const cached = this.dirs.get(dir);
    if (cached !== undefined) return { kind: 'dir', ...cached };
    let fd: number;
    if (dir === '/') {
      fd = openSync(this.root, constants.O_RDONLY | constants.O_DIRECTORY);
    } else {
      const up = this.directory(posix.dirname(dir));
      if (up.kind !== 'dir') return up;
      try {
        fd = openSync(at(up.fd, posix.basename(dir)), DIR_FLAGS);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return { kind: 'missing', missing: dir };
        if (code === 'ELOOP' || code === 'ENOTDIR') {
          // O_DIRECTORY|O_NOFOLLOW answers either for a link: ask the entry what it is.
          const name = posix.basename(dir);
          if (lstatSync(at(up.fd, name)).isSymbolicLink()) {
            throw new PathRefused(`${dir} is a symbolic link (to ${this.linkTarget(up.fd, name)}), not followed`);
          }
          throw new PathRefused(`${dir} is not a directory`);
        }
        throw err;
      }
    }
    const real = this.realOf(dir);
    this.dirs.set(dir, { fd, real });
    return { kind: 'dir', fd, real };
  }

  private linkTarget(dirFd: number, name: string): string {
    try {
      return readlinkSync(at(dirFd, name));
    } catch {
      return '?';
    }
  }

  /** lstat of a declared path; undefined when it (or a directory above it) is missing. */
  lstat(path: string): Stats | undefined {
    const parent = this.readable(path);
    if (parent.kind !== 'dir') return undefined;
    const real = `${parent.real}/${posix.basename(path)}`;
    try {
      const st = lstatSync(real);
      // A declared directory's own look is the check of every path below it.
      if (st.isDirectory() && path !== '/') this.checked.set(path, real);
      return st;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  /** Where a symbolic link at a declared path points, for messages. */
  readlink(path: string): string {
    const parent = this.requireParent(path);
    return this.linkTarget(parent, posix.basename(path));
  }

  /** Reads a regular file without following a link at its name. */
  readFile(path: string, size: number): Buffer {
    const parent = this.readable(path);
    if (parent.kind !== 'dir') throw new Error(`the directory ${parent.missing} does not exist`);
    const fd = openSync(`${parent.real}/${posix.basename(path)}`, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      return readFully(fd, size);
    } finally {
      closeSync(fd);
    }
  }

  private requireParent(path: string): number {
    const parent = this.parent(path);
    if (parent.kind !== 'dir') throw new Error(`the directory ${parent.missing} does not exist`);
    return parent.fd;
  }

  /**
   * Replaces a file atomically: a fresh temporary (O_EXCL|O_NOFOLLOW) in the same directory, owner
   * and mode set on it, fsynced, renamed over the name, the directory fsynced. A hard link planted at
   * the name keeps its own inode; a symbolic link at the name is replaced, never written through.
   */
  writeFile(path: string, bytes: Uint8Array, mode: number, uid: number, gid: number): void {
    const dir = this.requireParent(path);
    const name = posix.basename(path);
    const temporary = `.${name}.mesh-host-${randomBytes(6).toString('hex')}`;
    const fd = openSync(at(dir, temporary), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    let renamed = false;
    try {
      let written = 0;
      while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
      fchownSync(fd, uid, gid);
      fchmodSync(fd, mode);
      fsyncSync(fd);
      renameSync(at(dir, temporary), at(dir, name));
      renamed = true;
      fsyncSync(dir);
    } finally {
      closeSync(fd);
      if (!renamed) {
        try {
          unlinkSync(at(dir, temporary));
        } catch {
          // nothing to clean
        }
      }
    }
  }

  mkdir(path: string, mode: number, uid: number, gid: number): void {
    const dir = this.requireParent(path);
    mkdirSync(at(dir, posix.basename(path)), { mode: 0o700 });
    this.setDirectoryMeta(path, mode, uid, gid);
    fsyncSync(dir);
  }

  /** Mode and owner of a directory, through a descriptor opened without following a link. */
  setDirectoryMeta(path: string, mode: number, uid: number, gid: number): void {
    const fd = openSync(at(this.requireParent(path), posix.basename(path)), DIR_FLAGS);
    try {
      fchownSync(fd, uid, gid);
      fchmodSync(fd, mode);
    } finally {
      closeSync(fd);
    }
  }

  /** Mode and owner of a regular file in place (only for giving a taken original back). */
  fileMeta(path: string): Stats {
    const fd = openSync(at(this.requireParent(path), posix.basename(path)), constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      return fstatSync(fd);
    } finally {
      closeSync(fd);
    }
  }

  unlink(path: string): void {
    const dir = this.requireParent(path);
    unlinkSync(at(dir, posix.basename(path)));
    fsyncSync(dir);
  }

  /** Removes an empty directory; false when others filled it. */
  rmdir(path: string): boolean {
    const dir = this.requireParent(path);
    try {
      rmdirSync(at(dir, posix.basename(path)));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOTEMPTY' || (err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    }
    this.checked.delete(path);
    const cached = this.dirs.get(path);
    if (cached !== undefined) {
      closeSync(cached.fd);
      this.dirs.delete(path);
    }
    fsyncSync(dir);
    return true;
  }

  close(): void {
    for (const { fd } of this.dirs.values()) closeSync(fd);
    this.dirs.clear();
    this.checked.clear();
  }
}
