import { closeSync, fstatSync, type Stats } from 'node:fs';
import { posix } from 'node:path';
import { fchmodAsync, fchownAsync, fsyncAsync, mkdirAsync, rmdirAsync, unlinkAsync } from './fd-calls.js';
import type { RootedFs } from './rooted-fs.js';
import { writeHardLink, writeSymlink } from './write-links.js';
import { codeOf, describeFailure, dropTemporary, isMissing, isNotEmpty, pool, renameTemporary, setMetaOp, takeBack, writeTemporary, type Op, type TakenOriginal } from './write-ops.js';
import type { Change } from './changes.js';
import { FaultError, faultOf } from '../../core/system/errors.js';

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

export interface CommitResult {
  /** Resources whose change failed, with the first error of each, in staging order. */
  failed: Array<{ resource: string; error: Error }>;
  /** Changes of resources that succeeded, as the `whenDurable` callbacks amended them. */
  amended: Map<string, Amendment>;
}

/** One resource's writes in a batch, and what became of them. */
export interface Owner {
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

type Staged = { owner: Owner; op: Op };

/**
 * One commit of a batch, phase by phase (the order is the batch's promise: see WriteBatch): the
 * intent, removals, directories parents first, modes, files, links, each touched directory flushed
 * once, then what failed taken back and what succeeded told it is durable.
 */
export class Commit {
  private readonly all: Staged[];
  private readonly touched = new Map<string, Set<Owner>>();
  /** Directories this batch removed: their parents' flush is what makes that last. */
  private readonly gone = new Set<string>();

  constructor(
    private readonly fs: RootedFs,
    private readonly bounds: { parallel: number; wave: number },
    private readonly owners: Owner[],
  ) {
    this.all = owners.flatMap((owner) => owner.ops.map((op) => ({ owner, op })));
  }

  async run(intend: (intent: Intent) => Promise<void>): Promise<CommitResult> {
    const result: CommitResult = { failed: [], amended: new Map() };
    if (this.owners.length === 0) return result;
    const entries = intentOf(this.owners);
    if (entries.length > 0) {
      try {
        await intend({ root: this.fs.root, entries });
      } catch (err) {
        // Nothing of the batch was made: every resource in it fails, and says why.
        const message = `the intent journal could not be written (${codeOf(err)}); nothing of this change was made`;
        const fault = faultOf(err);
        const error = fault ? new FaultError(message, fault) : new Error(message);
        for (const owner of this.owners) result.failed.push({ resource: owner.id, error });
        return result;
      }
    }
    // Removals first: a path removed and made again in one batch is removed before it is made.
    await this.removeFiles();
    await this.removeDirectories();
    await this.makeDirectories();
    const writes = this.all.filter(({ op }) => op.kind === 'file' || op.kind === 'meta');
    for (let i = 0; i < writes.length; i += this.bounds.wave) await this.writeWave(writes.slice(i, i + this.bounds.wave));
    await this.links();
    await this.flush();
    return this.settle(result);
  }

  private touch(dir: string, owner: Owner): void {
    const set = this.touched.get(dir) ?? new Set();
    set.add(owner);
    this.touched.set(dir, set);
  }

  private fail(owner: Owner, err: unknown): void {
    owner.failure ??= err instanceof Error ? err : new Error(String(err));
  }

  /**
   * Files and modes in the fastest durable shape measured: every temporary of the wave written (and
   * every mode set), then all fsynced, then all renamed, each phase up to `parallel` calls at once; the
   * directories are flushed once, after the last wave. Fsyncs issued together share the file system's
   * journal commits, where a create or rename between two fsyncs waited for the commit before it.
   */
  private async writeWave(items: Staged[]): Promise<void> {
    const open = new Map<Staged, number>();
    const onError = ({ owner, op }: Staged, err: unknown) => this.fail(owner, describeFailure(op, err));
    await pool(this.bounds.parallel, items, async (item) => {
      if (item.owner.failure) return;
      open.set(item, item.op.kind === 'file' ? await writeTemporary(this.fs, item.op) : await setMetaOp(this.fs, item.op as Extract<Op, { kind: 'meta' }>));
    }, onError);
    const opened = [...open.keys()];
    await pool(this.bounds.parallel, opened, async (item) => {
      if (!item.owner.failure) await fsyncAsync(open.get(item)!);
    }, onError);
    await pool(this.bounds.parallel, opened, async (item) => {
      const { owner, op } = item;
      const fd = open.get(item)!;
      if (op.kind !== 'file') {
        // A mode set in place: its stat, whatever became of its resource (nothing to take back).
        try {
          if (!owner.failure) owner.stats.set(op.path, fstatSync(fd));
        } finally {
          closeSync(fd);
        }
        return;
      }
      if (owner.failure) return dropTemporary(this.fs, op, fd);
      owner.stats.set(op.path, await renameTemporary(this.fs, op, fd));
      if (op.creates) owner.made.push(op);
      this.touch(posix.dirname(op.path), owner);
    }, onError);
  }

  /** Every op of one kind, up to `parallel` at once, skipping resources that already failed. */
  private async each<K extends Op['kind']>(kind: K, work: (owner: Owner, op: Extract<Op, { kind: K }>) => Promise<void>, items = this.all): Promise<void> {
    const ofKind = items.filter((x) => x.op.kind === kind);
    await pool(this.bounds.parallel, ofKind, async ({ owner, op }) => {
      if (owner.failure) return;
      await work(owner, op as Extract<Op, { kind: K }>);
    }, ({ owner, op }, err) => this.fail(owner, describeFailure(op, err)));
  }

  private async removeFiles(): Promise<void> {
    await this.each('unlink', async (owner, op) => {
      await this.fs.withParent(op.path, (at) => unlinkAsync(at)).catch((err) => (isMissing(err) ? undefined : Promise.reject(err)));
      this.touch(posix.dirname(op.path), owner);
    });
  }

  /** One at a time, deepest first as staged: a directory others filled is left, and said. */
  private async removeDirectories(): Promise<void> {
    for (const { owner, op } of this.all) {
      if (op.kind !== 'rmdir' || owner.failure) continue;
      try {
        const removed = await this.fs.withParent(op.path, (at) => rmdirAsync(at).then(() => true, (err) => (isNotEmpty(err) ? false : isMissing(err) ? true : Promise.reject(err))));
        if (removed) {
          this.fs.forgetDirectory(op.path);
          this.gone.add(op.path);
        } else owner.left.push(op.path);
        this.touch(posix.dirname(op.path), owner);
      } catch (err) {
        this.fail(owner, describeFailure(op, err));
      }
    }
  }

  /** Parents first: those at one depth are made together, each depth after the one above. */
  private async makeDirectories(): Promise<void> {
    const mkdirs = this.all.filter((x) => x.op.kind === 'mkdir');
    for (const depth of [...new Set(mkdirs.map(({ op }) => depthOf(op.path)))].sort((a, b) => a - b)) {
      await this.each('mkdir', async (owner, op) => {
        await this.fs.withParent(op.path, (at) => mkdirAsync(at, { mode: 0o700 }));
        owner.made.push(op);
        await this.fs.withDirectory(op.path, async (fd) => {
          await fchownAsync(fd, op.meta.uid, op.meta.gid);
          await fchmodAsync(fd, op.meta.mode);
        });
        this.touch(posix.dirname(op.path), owner);
        this.touch(op.path, owner);
      }, mkdirs.filter(({ op }) => depthOf(op.path) === depth));
    }
  }

  /** Links last, hard then symbolic: every file they may name is written, and no write of this batch comes after one. */
  private async links(): Promise<void> {
    await this.each('hardlink', async (owner, op) => {
      const { st, copied } = await writeHardLink(this.fs, op);
      owner.stats.set(op.path, st);
      if (copied) owner.copied.push(op.path);
      this.touch(posix.dirname(op.path), owner);
    });
    await this.each('symlink', async (owner, op) => {
      owner.stats.set(op.path, await writeSymlink(this.fs, op));
      this.touch(posix.dirname(op.path), owner);
    });
  }

  /** Each directory touched, fsynced once: the renames, creations and removals in it survive a crash. */
  private async flush(): Promise<void> {
    await pool(this.bounds.parallel, [...this.touched.entries()].filter(([dir]) => !this.gone.has(dir)), async ([dir]) => {
      await this.fs.withDirectory(dir, (fd) => fsyncAsync(fd));
    }, (entry, err) => {
      const message = `the directory ${entry[0]} could not be flushed (${codeOf(err)})`;
      const fault = faultOf(err);
      for (const owner of entry[1]) this.fail(owner, fault ? new FaultError(message, { ...fault, path: entry[0] }) : new Error(message));
    });
  }

  /** What failed resources made goes again (the latest staged resource first); the others hear they are durable. */
  private async settle(result: CommitResult): Promise<CommitResult> {
    for (const owner of [...this.owners].reverse()) if (owner.failure) await takeBack(this.fs, owner.made);
    for (const owner of this.owners) {
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

const depthOf = (path: string) => path.split('/').length;
