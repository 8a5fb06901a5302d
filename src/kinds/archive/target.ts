import type { Stats } from 'node:fs';

/** Mode and owner of what an archive unpacks: root, or the resource's owner and group; never the archive's. */
export interface Meta {
  mode: number;
  uid: number;
  gid: number;
}

/** Who owns what an archive unpacks. */
export type Owner = Omit<Meta, 'mode'>;

/** Reads of the target, through the rooted checks (a link or a non-directory on the way is refused). */
export interface TargetReads {
  readonly root: string;
  /** Throws (PathRefused) when a directory on the way is a link or not a directory. */
  lstat(path: string): Stats | undefined;
  readlink(path: string): string;
  readFile(path: string, size: number): Buffer;
}

/** What a flush made durable. */
export interface Flushed {
  /** The stat of a file written in this flush, after its rename. */
  statOf(path: string): Stats | undefined;
  /** Directories asked to go that others had filled: left. */
  left: string[];
  /** Hard links the file system refused, made as copies instead. */
  copied: string[];
}

/**
 * Writes to the target, staged and made durable together by the host's write path (pinned directory
 * descriptors, never through a link, each file replaced by rename); `flush` makes what is staged
 * durable and fails with the first error of it.
 */
export interface TargetWrites {
  writeFile(path: string, bytes: Uint8Array, meta: Meta): void;
  makeDirectory(path: string, meta: Meta): void;
  setMeta(path: string, meta: Meta, kind: 'file' | 'directory'): void;
  removeFile(path: string): void;
  removeDirectory(path: string): void;
  /** A second name for a file staged or made before (a copy where the file system refuses); after every file. */
  hardLink(path: string, existing: string): void;
  /** A symbolic link made or replaced as a name, its text never followed; after every file and hard link. */
  symlink(path: string, target: string, owner: Owner): void;
  /** Staged past the write path's bounds: flush before staging more. */
  readonly full: boolean;
  flush(): Promise<Flushed>;
}

/** lstat, with a link or a non-directory on the way as a problem instead of an exception. */
export function look(fs: TargetReads, path: string): { st: Stats | undefined } | { problem: string } {
  try {
    return { st: fs.lstat(path) };
  } catch (err) {
    if ((err as Error).name === 'PathRefused') return { problem: (err as Error).message };
    throw err;
  }
}
