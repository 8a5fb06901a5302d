import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import type { RootedFs } from './rooted-fs.js';
import { Commit, type Amendment, type CommitResult, type Durable, type Intent, type Owner } from './write-commit.js';
import type { Meta, Op, TakenOriginal } from './write-ops.js';

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
  /** Calls in flight at once while committing. */
  parallel: number;
  /** Files written before their fsyncs and renames: descriptors held open at once. */
  wave: number;
}

export const DEFAULT_BOUNDS: BatchBounds = { maxOps: 4096, maxBytes: 32 << 20, parallel: 32, wave: 1024 };

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
 * the directory's pinned descriptor) with owner and mode set, and modes set in place, a wave of up to
 * `wave` at a time: all written, then all fsynced, then all renamed over their names, each phase up to
 * `parallel` calls at once; links; then each directory touched fsynced once. A crash at any
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
    return new Commit(this.fs, this.bounds, owners).run(this.intend);
  }
}
