import { closeSync, constants, lstatSync, openSync, readlinkSync, type Stats } from 'node:fs';
import { posix } from 'node:path';
import { readFully } from '../../core/system/read.js';

/** A declared path could not be reached without following a link or crossing a non-directory. */
export class PathRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PathRefused';
  }
}

/** A directory on the way to a declared path is not there (a write cannot make its parents). */
export class MissingDirectory extends Error {
  constructor(readonly directory: string) {
    super(`the directory ${directory} does not exist`);
    this.name = 'MissingDirectory';
  }
}

type CheckedDirectory = { kind: 'dir'; real: string } | { kind: 'missing'; missing: string };

export type ParentLookup = { kind: 'dir'; fd: number; real: string } | { kind: 'missing'; missing: string };

/** lstat's answer for a missing path: undefined, not a thrown ENOENT (one options object for every call). */
const NO_THROW = Object.freeze({ throwIfNoEntry: false as const });

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const at = (fd: number, name: string) => `/proc/self/fd/${fd}/${name}`;

/**
 * Every declared path, taken inside a root and never through a symbolic link: each directory on the
 * way is opened O_DIRECTORY|O_NOFOLLOW from the one above it, and the last component is reached by
 * /proc/self/fd/DIR/NAME, so a link planted at or above a declared path is refused, not followed, and
 * a directory swapped after it was opened cannot redirect a write. Opened directories are cached for
 * one batch of writes (releaseDirectories) and at most one apply (close). Writes go through the apply's
 * WriteBatch (write-batch.ts), which reaches every name through these pinned descriptors.
 *
 * Reads for the check (lstat, content) go by real paths whose every directory was lstat'd once in this
 * apply and found to be a directory, not a link, with O_NOFOLLOW on the last component: no descriptor
 * is opened for a check (opening through /proc/self/fd costs several plain lookups, and the no-op
 * apply is the hot path), and a declared directory's own lstat serves as its check. Every write goes
 * through pinned descriptors, so a swap after the check can mislead a read, never redirect a write.
 */
export class RootedFs {
  private readonly dirs = new Map<string, { fd: number; real: string }>();
  /** What lstat found since the last commit, by declared path. */
  private readonly looks = new Map<string, Stats | undefined>();
  /** Directories found free of links by lstat in this apply, by declared path: their real paths (one answer each, reused). */
  private readonly checked = new Map<string, { kind: 'dir'; real: string }>();

  constructor(readonly root: string) {}

  /** The directory holding a declared path, opened; or the first missing directory on the way. */
  parent(path: string): ParentLookup {
    return this.directory(posix.dirname(path));
  }

  private realOf(dir: string): string {
    return dir === '/' ? this.root : `${this.root === '/' ? '' : this.root}${dir}`;
  }

  /** For a read: the real path of the directory holding a declared path, every directory on the way checked once. */
  private readable(path: string): CheckedDirectory {
    return this.checkedDirectory(posix.dirname(path));
  }

  private checkedDirectory(dir: string): CheckedDirectory {
    const known = this.checked.get(dir);
    if (known !== undefined) return known;
    const pinned = this.dirs.get(dir);
    if (pinned !== undefined) return { kind: 'dir', real: pinned.real };
    if (dir === '/') return { kind: 'dir', real: this.root };
    const up = this.checkedDirectory(posix.dirname(dir));
    if (up.kind !== 'dir') return up;
    const real = this.realOf(dir);
    const st = lstatSync(real, NO_THROW);
    if (st === undefined) return { kind: 'missing', missing: dir };
    this.refuseUnlessDirectory(dir, st, real);
    return this.markChecked(dir, real);
  }

  private markChecked(dir: string, real: string): CheckedDirectory {
    const answer = { kind: 'dir' as const, real };
    this.checked.set(dir, answer);
    return answer;
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
    // Opened without following a link at any step: as good a check of the way as an lstat.
    if (!this.checked.has(dir)) this.markChecked(dir, real);
    return { kind: 'dir', fd, real };
  }

  private linkTarget(dirFd: number, name: string): string {
    try {
      return readlinkSync(at(dirFd, name));
    } catch {
      return '?';
    }
  }

  /**
   * lstat of a declared path; undefined when it (or a directory above it) is missing. What the plan
   * saw stands for the apply's second look until a batch of this apply commits (nothing of ours has
   * changed the machine before that): a path is looked at once on its way, not three times.
   */
  lstat(path: string): Stats | undefined {
    if (this.looks.has(path)) return this.looks.get(path);
    const st = this.look(path);
    this.looks.set(path, st);
    return st;
  }

  /**
   * Counts the commits that may have changed what a look saw: a look made in this generation still
   * stands (see Look, and file and directory checks that hand their look to the apply).
   */
  get generation(): number {
    return this.generations;
  }

  private generations = 0;

  /**
   * One lstat of a declared path, kept nowhere: the check of a path found as declared needs it once,
   * and 10,000 kept Stats would outlive the apply's young generation. A missing path is an answer,
   * not an exception (a thrown ENOENT costs more than the lstat: a first converge has 10,000).
   */
  look(path: string): Stats | undefined {
    const slash = path.lastIndexOf('/');
    const parent = this.checkedDirectory(slash === 0 ? '/' : path.slice(0, slash));
    if (parent.kind !== 'dir') return undefined;
    const real = this.realOf(path);
    const st = lstatSync(real, NO_THROW);
    // A declared directory's own look is the check of every path below it.
    if (st !== undefined && path !== '/' && st.isDirectory() && !this.checked.has(path)) this.markChecked(path, real);
    return st;
  }

  /** Where a symbolic link at a declared path points, for messages. */
  readlink(path: string): string {
    const parent = this.requireParent(path);
    return this.linkTarget(parent, posix.basename(path));
  }

  /** Reads a regular file without following a link at its name. */
  readFile(path: string, size: number): Buffer {
    const parent = this.readable(path);
    if (parent.kind !== 'dir') throw new MissingDirectory(parent.missing);
    const fd = openSync(`${parent.real}/${posix.basename(path)}`, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      return readFully(fd, size);
    } finally {
      closeSync(fd);
    }
  }

  private requireParent(path: string): number {
    const parent = this.parent(path);
    if (parent.kind !== 'dir') throw new MissingDirectory(parent.missing);
    return parent.fd;
  }

  /**
   * Runs a write on a declared path through its directory's pinned descriptor: `at` is the path's own
   * name there, `atName(n)` another name in the same directory (a temporary). For the write batch.
   */
  withParent<T>(path: string, fn: (at: string, atName: (name: string) => string) => Promise<T>): Promise<T> {
    let dir: number;
    try {
      dir = this.requireParent(path);
    } catch (err) {
      return Promise.reject(err);
    }
    return fn(at(dir, posix.basename(path)), (name) => at(dir, name));
  }

  /**
   * The name of a declared path (or of `sibling`, a name beside it) through its directory's pinned
   * descriptor, for a synchronous removal at start; undefined when a directory on the way is missing.
   */
  pinned(path: string, sibling?: string): string | undefined {
    const parent = this.parent(path);
    return parent.kind === 'dir' ? at(parent.fd, sibling ?? posix.basename(path)) : undefined;
  }

  /** Runs fn with a declared directory's own pinned descriptor (to fsync it, or set its mode). */
  withDirectory<T>(path: string, fn: (fd: number) => Promise<T>): Promise<T> {
    const dir = this.directory(path);
    if (dir.kind !== 'dir') return Promise.reject(new MissingDirectory(dir.missing));
    return fn(dir.fd);
  }

  /** A directory removed: neither its descriptor nor its check may serve a later path. */
  forgetDirectory(path: string): void {
    this.checked.delete(path);
    this.forgetLooks();
    const cached = this.dirs.get(path);
    if (cached !== undefined) {
      closeSync(cached.fd);
      this.dirs.delete(path);
    }
  }

  private forgetLooks(): void {
    this.looks.clear();
    this.generations += 1;
  }

  /** Closes the descriptors a batch opened; the next write opens (and pins) its directories again. */
  releaseDirectories(): void {
    for (const { fd } of this.dirs.values()) closeSync(fd);
    this.dirs.clear();
    this.forgetLooks();
  }

  close(): void {
    for (const { fd } of this.dirs.values()) closeSync(fd);
    this.dirs.clear();
    this.checked.clear();
    this.forgetLooks();
  }
}
