import type { Stats } from 'node:fs';

/**
 * The rooted, descriptor-pinned file system an archive is unpacked through (the host's RootedFs):
 * declared paths inside the root, never through a symbolic link. Writes may be synchronous or not.
 */
export interface TargetFs {
  readonly root: string;
  /** Throws (PathRefused) when a directory on the way is a link or not a directory. */
  lstat(path: string): Stats | undefined;
  readlink(path: string): string;
  readFile(path: string, size: number): Buffer;
  writeFile(path: string, bytes: Uint8Array, mode: number, uid: number, gid: number): void | Promise<void>;
  mkdir(path: string, mode: number, uid: number, gid: number): void | Promise<void>;
  setDirectoryMeta(path: string, mode: number, uid: number, gid: number): void | Promise<void>;
  unlink(path: string): void | Promise<void>;
  rmdir(path: string): boolean | Promise<boolean>;
}

/** Who owns what an archive unpacks: root, or the resource's owner and group; never the archive's. */
export interface Owner {
  uid: number;
  gid: number;
}

/** lstat, with a link or a non-directory on the way as a problem instead of an exception. */
export function look(fs: TargetFs, path: string): { st: Stats | undefined } | { problem: string } {
  try {
    return { st: fs.lstat(path) };
  } catch (err) {
    if ((err as Error).name === 'PathRefused') return { problem: (err as Error).message };
    throw err;
  }
}
