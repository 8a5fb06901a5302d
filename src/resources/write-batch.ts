import {
  closeSync, constants, fchmod, fchown, fstatSync, fsync, mkdir, open, rename, rmdir,
  unlink, write, writeSync, type Stats,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import { promisify } from 'node:util';
import { MissingDirectory, PathRefused, type RootedFs } from './rooted-fs.js';
import { writeHardLink, writeSymlink, type HardLinkOp, type SymlinkOp } from './write-links.js';
import type { Change } from './changes.js';

const writeAsync = promisify(write);
const fchownAsync = promisify(fchown);
const fchmodAsync = promisify(fchmod);
const fsyncAsync = promisify(fsync);
const mkdirAsync = promisify(mkdir);
const unlinkAsync = promisify(unlink);
const rmdirAsync = promisify(rmdir);
const openAsync = promisify(open);
const renameAsync = promisify(rename);

/** Mode and owner a write leaves on what it makes. */
export interface Meta {
  mode: number;
  uid: number;
  gid: number;
}

/**
 * One line of the intent journal: before a batch makes anything, every path it may leave behind is
 * recorded durably (its temporary files, and what it creates where nothing stood), so that the next
 * start after a crash knows them all. Paths are declared paths under `root`.
 */
export interface Intent {
  root: string;
  entries: IntentEntry[];
}

export interface IntentEntry {
  /** The declared path. */
  path: string;
  /** The temporary name beside it, for a file. */
  temporary?: string;
  /** Nothing stood at the path: the batch creates it. */
  creates?: true;
  directory?: true;
  /**
   * The batch changes something the host takes over (an adopted machine's file or directory): what it
   * was, and for a file where its content is kept. A crash before the store records the taking gives it
   * back at the next start; otherwise the next apply would take what this one wrote as the original.
   */
  original?: TakenOriginal;
}

export interface TakenOriginal {
  mode: number;
  uid: number;
  gid: number;
  /** The kept copy of a file's content (an absolute path under the state directory). */
  copy?: string;
}

/** What a resource's change learns once it is durable. */
export interface Durable {
  /** The stat of a file written by this change, taken after its rename (the next apply's stat compare). */
  statOf(path: string): Stats | undefined;
  /** Directories this change asked to remove that others had filled: left in place. */
  left: string[];
  /** Hard links the file system refused: made as copies instead. */
  copied: string[];
}

/** What a resource may say once its change is durable: a directory that was left, say. */
export interface Amendment {
  verb?: 'leave';
  changes?: Change[];
  detail?: string;
}

type Op =
  | { kind: 'file'; path: string; bytes: Uint8Array; meta: Meta; creates: boolean; temporary: string; original?: TakenOriginal }
  | { kind: 'mkdir'; path: string; meta: Meta }
  | { kind: 'meta'; path: string; meta: Meta; directory: boolean; original?: TakenOriginal }
  | { kind: 'unlink'; path: string }
  | { kind: 'rmdir'; path: string }
  | ({ kind: 'hardlink' } & HardLinkOp)
  | ({ kind: 'symlink' } & SymlinkOp);

interface Owner {
  id: string;
  ops: Op[];
  durable: Array<(outcome: Durable) => Amendment | void>;
  failure?: Error;
  stats: Map<string, Stats>;
  left: string[];
  copied: string[];
  /** Ops that made something new, to take back when another op of the same resource fails. */
  made: Op[];
}

/** A resource's writes within one batch. */
export interface StagedChange {
  /**
   * Replaces (or creates, `creates: true` when nothing stands at the path) a regular file, atomically.
   * `original`: the file is being taken over; what it was, for the intent.
   */
  writeFile(path: string, bytes: Uint8Array, meta: Meta, options?: { creates?: boolean; original?: TakenOriginal }): void;
  /** Makes a directory where nothing stands. */
  makeDirectory(path: string, meta: Meta): void;
  /** Sets mode and owner in place, on a file or a directory (never through a link). */
  setMeta(path: string, meta: Meta, kind: 'file' | 'directory', options?: { original?: TakenOriginal }): void;
  /** Removes a file (or a link) at a declared path. */
  removeFile(path: string): void;
  /** Removes a directory if it is empty; one others filled is left, and said in `Durable.left`. */
  removeDirectory(path: string): void;
  /**
   * Gives a file a second name (a hard link), after every file of the batch is written; a copy where
   * the file system refuses (said in `Durable.copied`). Replaces what stands at the name.
   */
  hardLink(path: string, existing: string): void;
  /** Makes (or replaces) a symbolic link, after every file and hard link of the batch; its text is never followed. */
  symlink(path: string, target: string, owner: { uid: number; gid: number }): void;
  /**
   * Runs once every op of this resource in the batch is durable: record the store here, never before,
   * so the store never claims what is not durably on the machine. Not run when an op failed.
   */
  whenDurable(then: (outcome: Durable) => Amendment | void): void;
}

export interface BatchBounds {
  /** Ops staged before the batch must be committed. */
  maxOps: number;
  /** Bytes of file content staged before the batch must be committed (memory). */
  maxBytes: number;
  /** Files in flight at once while committing (open descriptors). */
  parallel: number;
}

/** Content up to this size is written in line; larger files are written on libuv's threads. */
const IN_LINE_BYTES = 256 << 10;

export const DEFAULT_BOUNDS: BatchBounds = { maxOps: 4096, maxBytes: 32 << 20, parallel: 32 };

export interface CommitResult {
  /** Resources whose change failed, with the first error of each, in staging order. */
  failed: Array<{ resource: string; error: Error }>;
  /** Changes of resources that succeeded, as the `whenDurable` callbacks amended them. */
  amended: Map<string, Amendment>;
}

/**
 * The writes of one apply, made durable together. A handler's apply does not touch the machine
 * itself: it stages its changes with `writes.change(resource.id)` and returns its step; the apply
 * commits the batch (when it is full, before a handler that does not write through it, and at the
 * end), and records the store in `whenDurable`. How a handler writes within an apply:
 *
 *     const change = ctx.writes.change(resource.id);
 *     change.makeDirectory('/srv/app', { mode: 0o755, uid: 0, gid: 0 });
 *     change.writeFile('/srv/app/a.conf', bytes, { mode: 0o644, uid: 0, gid: 0 }, { creates: true });
 *     change.removeFile('/srv/app/old.conf');
 *     change.whenDurable((done) => ctx.store.record({ ..., seen: seenOf(done.statOf('/srv/app/a.conf')!) }));
 *
 * A commit, in order: the intent (every temporary name and every path made where nothing stood)
 * appended durably to the journal; removals (files, then directories, deepest first as staged);
 * directories made, parents first; files written to fresh temporaries (O_EXCL|O_NOFOLLOW, through
 * the directory's pinned descriptor) concurrently up to `parallel` at once, each with owner and mode
 * set, fsynced, renamed over its name; then each directory touched fsynced once. A crash at any
 * instant leaves each file old or new, never torn, and the intent names everything that may be left.
 * An op that fails fails its resource alone (a failed fsync of one file fails that file's resource;
 * of a directory, the resources that wrote into it); what that resource made in the batch is taken
 * back; the other resources of the batch commit.
 */
export class WriteBatch {
  private owners = new Map<string, Owner>();
  private ops = 0;
  private bytes = 0;
  private counter = 0;
  private readonly tag = randomBytes(4).toString('hex');

  constructor(
    private readonly fs: RootedFs,
    /** Appends an intent durably before anything of the batch is made. */
    private readonly intend: (intent: Intent) => Promise<void>,
    private readonly bounds: BatchBounds = DEFAULT_BOUNDS,
  ) {}

  change(resource: string): StagedChange {
    let owner = this.owners.get(resource);
    if (!owner) {
      owner = { id: resource, ops: [], durable: [], stats: new Map(), left: [], copied: [], made: [] };
      this.owners.set(resource, owner);
    }
    const o = owner;
    const stage = (op: Op) => {
      o.ops.push(op);
      this.ops++;
      if (op.kind === 'file') this.bytes += op.bytes.length;
    };
    const temporary = (path: string) => `.${posix.basename(path)}.mesh-host-${this.tag}-${(this.counter++).toString(36)}`;
    return {
      writeFile: (path, bytes, meta, options) =>
        stage({
          kind: 'file', path, bytes, meta, creates: options?.creates === true, temporary: temporary(path),
          ...(options?.original ? { original: options.original } : {}),
        }),
      makeDirectory: (path, meta) => stage({ kind: 'mkdir', path, meta }),
      setMeta: (path, meta, kind, options) => stage({ kind: 'meta', path, meta, directory: kind === 'directory', ...(options?.original ? { original: options.original } : {}) }),
      removeFile: (path) => stage({ kind: 'unlink', path }),
      removeDirectory: (path) => stage({ kind: 'rmdir', path }),
      hardLink: (path, existing) => stage({ kind: 'hardlink', path, existing, temporary: temporary(path) }),
      symlink: (path, target, owner) => stage({ kind: 'symlink', path, target, uid: owner.uid, gid: owner.gid, temporary: temporary(path) }),
      whenDurable: (then) => void o.durable.push(then),
    };
  }

  /** Staged past its bounds: commit before staging more. */
  get full(): boolean {
    return this.ops >= this.bounds.maxOps || this.bytes >= this.bounds.maxBytes;
  }

  get empty(): boolean {
    return this.owners.size === 0;
  }

  /** Makes everything staged durable, then runs the `whenDurable` callbacks; the batch is empty after. */
  async commit(): Promise<CommitResult> {
    const owners = [...this.owners.values()];
    this.owners = new Map();
    this.ops = 0;
    this.bytes = 0;
    const result: CommitResult = { failed: [], amended: new Map() };
    if (owners.length === 0) return result;

    const entries = intentOf(owners);
    if (entries.length > 0) {
      try {
        await this.intend({ root: this.fs.root, entries });
      } catch (err) {
        // Nothing of the batch was made: every resource in it fails, and says why.
        const error = new Error(`the intent journal could not be written (${codeOf(err)}); nothing of this change was made`);
        for (const owner of owners) result.failed.push({ resource: owner.id, error });
        return result;
      }
    }

    const all = owners.flatMap((owner) => owner.ops.map((op) => ({ owner, op })));
    const touched = new Map<string, Set<Owner>>();
    /** Directories this batch removed: their parents' flush is what makes that last. */
    const gone = new Set<string>();
    const touch = (dir: string, owner: Owner) => {
      const set = touched.get(dir) ?? new Set();
      set.add(owner);
      touched.set(dir, set);
    };
    const fail = (owner: Owner, err: unknown) => {
      owner.failure ??= err instanceof Error ? err : new Error(String(err));
    };
    /** An op's failure, naming its path: "could not write /etc/a.conf (EIO: i/o error, fsync)". */
    const failOp = ({ owner, op }: { owner: Owner; op: Op }, err: unknown) => fail(owner, describe(op, err));

    // Removals first: a path removed and made again in one batch is removed before it is made.
    await this.pool(all.filter((x) => x.op.kind === 'unlink'), async ({ owner, op }) => {
      if (owner.failure) return;
      await this.fs.withParent(op.path, (at) => unlinkAsync(at)).catch((err) => (isMissing(err) ? undefined : Promise.reject(err)));
      touch(posix.dirname(op.path), owner);
    }, failOp);
    for (const { owner, op } of all) {
      if (op.kind !== 'rmdir' || owner.failure) continue;
      try {
        const removed = await this.fs.withParent(op.path, (at) => rmdirAsync(at).then(() => true, (err) => (isNotEmpty(err) ? false : isMissing(err) ? true : Promise.reject(err))));
        if (removed) {
          this.fs.forgetDirectory(op.path);
          gone.add(op.path);
        } else owner.left.push(op.path);
        touch(posix.dirname(op.path), owner);
      } catch (err) {
        failOp({ owner, op }, err);
      }
    }
    // Directories, parents first: those at one depth are made together, each depth after the one above.
    const mkdirs = all.filter((x) => x.op.kind === 'mkdir');
    for (const depth of [...new Set(mkdirs.map(({ op }) => depthOf(op.path)))].sort((a, b) => a - b)) {
      await this.pool(mkdirs.filter(({ op }) => depthOf(op.path) === depth), async ({ owner, op }) => {
        if (owner.failure || op.kind !== 'mkdir') return;
        await this.fs.withParent(op.path, (at) => mkdirAsync(at, { mode: 0o700 }));
        owner.made.push(op);
        await this.fs.withDirectory(op.path, async (fd) => {
          await fchownAsync(fd, op.meta.uid, op.meta.gid);
          await fchmodAsync(fd, op.meta.mode);
        });
        touch(posix.dirname(op.path), owner);
        touch(op.path, owner);
      }, failOp);
    }
    await this.pool(all.filter((x) => x.op.kind === 'meta'), async ({ owner, op }) => {
      if (owner.failure || op.kind !== 'meta') return;
      owner.stats.set(op.path, await this.setMeta(op.path, op.meta, op.directory));
    }, failOp);
    await this.pool(all.filter((x) => x.op.kind === 'file'), async ({ owner, op }) => {
      if (owner.failure || op.kind !== 'file') return;
      const st = await this.writeFile(op);
      owner.stats.set(op.path, st);
      if (op.creates) owner.made.push(op);
      touch(posix.dirname(op.path), owner);
    }, failOp);
    await this.links(all, touch, failOp);

    // Each directory touched, fsynced once: the renames, creations and removals in it survive a crash.
    await this.pool([...touched.entries()].filter(([dir]) => !gone.has(dir)), async ([dir]) => {
      await this.fs.withDirectory(dir, (fd) => fsyncAsync(fd));
    }, (entry, err) => {
      for (const owner of entry[1]) fail(owner, new Error(`the directory ${entry[0]} could not be flushed (${codeOf(err)})`));
    });

    // What failed resources made goes again, the latest staged first (a file before its directory).
    for (const owner of [...owners].reverse()) if (owner.failure) await this.takeBack(owner);
    for (const owner of owners) {
      if (owner.failure) {
        result.failed.push({ resource: owner.id, error: owner.failure });
        continue;
      }
      const outcome: Durable = { statOf: (path) => owner.stats.get(path), left: owner.left, copied: owner.copied };
      for (const then of owner.durable) {
        const amendment = then(outcome);
        if (amendment) result.amended.set(owner.id, { ...result.amended.get(owner.id), ...amendment });
      }
    }
    this.fs.releaseDirectories();
    return result;
  }

  /** Links last, hard then symbolic: every file they may name is written, and no write of this batch comes after one. */
  private async links(all: Array<{ owner: Owner; op: Op }>, touch: (dir: string, owner: Owner) => void, failOp: (item: { owner: Owner; op: Op }, err: unknown) => void): Promise<void> {
    for (const kind of ['hardlink', 'symlink'] as const) {
      await this.pool(all.filter((x) => x.op.kind === kind), async ({ owner, op }) => {
        if (owner.failure) return;
        if (op.kind === 'hardlink') {
          const { st, copied } = await writeHardLink(this.fs, op);
          owner.stats.set(op.path, st);
          if (copied) owner.copied.push(op.path);
        } else if (op.kind === 'symlink') owner.stats.set(op.path, await writeSymlink(this.fs, op));
        touch(posix.dirname(op.path), owner);
      }, failOp);
    }
  }

  /**
   * Temporary written whole, owner and mode set, fsynced, renamed over the name; its stat after. Every
   * call that changes the directory or the inode (the creation, owner, mode, the fsync, the rename) goes
   * to libuv's threads: with other files of the batch being flushed, each may wait on the file system's
   * journal, and waiting in line stalled the event loop (and the batch) for most of a first converge.
   * The write of small content (page cache only) and the stat and close stay in line.
   */
  private async writeFile(op: Extract<Op, { kind: 'file' }>): Promise<Stats> {
    return this.fs.withParent(op.path, async (at, atName) => {
      const temporary = atName(op.temporary);
      // The creation and the rename wait on the file system's journal while other files of the batch
      // are being flushed: on libuv's threads, so that neither the event loop nor the other files wait.
      const fd = await openAsync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      let renamed = false;
      try {
        let written = 0;
        const inLine = op.bytes.length <= IN_LINE_BYTES;
        while (written < op.bytes.length) {
          written += inLine ? writeSync(fd, op.bytes, written, op.bytes.length - written) : (await writeAsync(fd, op.bytes, written, op.bytes.length - written)).bytesWritten;
        }
        await fchownAsync(fd, op.meta.uid, op.meta.gid);
        await fchmodAsync(fd, op.meta.mode);
        await fsyncAsync(fd);
        await renameAsync(temporary, at);
        renamed = true;
        // After the rename: a rename changes the inode's ctime, which the next apply compares.
        return fstatSync(fd);
      } finally {
        closeSync(fd);
        if (!renamed) await unlinkAsync(temporary).catch(() => undefined); // else named by the intent: the next start removes it
      }
    });
  }

  /** Mode and owner set in place and fsynced; its stat after. */
  private async setMeta(path: string, meta: Meta, directory: boolean): Promise<Stats> {
    return this.fs.withParent(path, async (at) => {
      const fd = await openAsync(at, directory ? constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW : constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        await fchownAsync(fd, meta.uid, meta.gid);
        await fchmodAsync(fd, meta.mode);
        await fsyncAsync(fd);
        return fstatSync(fd);
      } finally {
        closeSync(fd);
      }
    });
  }

  /** A resource that failed leaves nothing new behind: what it created in this batch goes again. */
  private async takeBack(owner: Owner): Promise<void> {
    for (const op of [...owner.made].reverse()) {
      try {
        if (op.kind === 'file') await this.fs.withParent(op.path, (at) => unlinkAsync(at));
        else if (op.kind === 'mkdir') await this.fs.withParent(op.path, (at) => rmdirAsync(at));
        this.fs.forgetDirectory(op.path);
      } catch {
        // Still named by the intent: the next start takes it back.
      }
    }
  }

  /** Runs work over items with at most `parallel` in flight; a failure goes to onError, the rest go on. */
  private async pool<T>(items: T[], work: (item: T) => Promise<void>, onError: (item: T, err: unknown) => void): Promise<void> {
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
    await Promise.all(Array.from({ length: Math.min(this.bounds.parallel, items.length) }, lane));
  }
}

function intentOf(owners: Owner[]): IntentEntry[] {
  const entries: IntentEntry[] = [];
  for (const owner of owners) {
    for (const op of owner.ops) {
      if (op.kind === 'hardlink' || op.kind === 'symlink') entries.push({ path: op.path, temporary: op.temporary });
      else if (op.kind === 'file') entries.push({ path: op.path, temporary: op.temporary, ...(op.creates ? { creates: true as const } : {}), ...(op.original ? { original: op.original } : {}) });
      else if (op.kind === 'mkdir') entries.push({ path: op.path, creates: true, directory: true });
      else if (op.kind === 'meta' && op.original) entries.push({ path: op.path, original: op.original, ...(op.directory ? { directory: true as const } : {}) });
    }
  }
  return entries;
}

const VERB: Record<Op['kind'], string> = {
  file: 'write', mkdir: 'make the directory', meta: 'set mode and owner of', unlink: 'remove', rmdir: 'remove the directory', hardlink: 'link', symlink: 'make the symbolic link',
};

function describe(op: Op, err: unknown): Error {
  if (err instanceof PathRefused || err instanceof MissingDirectory) return err;
  return new Error(`could not ${VERB[op.kind]} ${op.path} (${(err as Error).message})`);
}

const depthOf = (path: string) => path.split('/').length;
const codeOf = (err: unknown) => (err as NodeJS.ErrnoException).code ?? (err as Error).message;
const isMissing = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';
const isNotEmpty = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOTEMPTY' || (err as NodeJS.ErrnoException).code === 'EEXIST';
