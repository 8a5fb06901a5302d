import { createHash, hash } from 'node:crypto';
import { readFileSync, unlinkSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Stats } from 'node:fs';
import type { FileResource } from '../../core/declaration/schema.js';
import { describeOpenProblem, type SealedValue } from '../../core/declaration/sealed.js';
import type { ResourceRecord, SeenFile } from '../../core/store/state.js';
import { writeDurablyAsync } from '../../core/system/durable.js';
import { foundVerdict, HELD_REASON, lookAt, lookOf, metaDrift, metaMatches, ownRecord, wantedMeta, type Wanted } from '../../engine/converge/ownership.js';
import { lineChanges } from '../../engine/converge/line-changes.js';
import { PathRefused } from '../../engine/converge/rooted-fs.js';
import { checkedOf, pathShape, UNCHANGED, type Checked, type ConvergeContext, type ResourceHandler } from '../../engine/converge/handler-types.js';
import { CREATE, HOLD, LEAVE, REMOVE, TAKE, type Change } from '../../engine/converge/changes.js';
import type { TakenOriginal } from '../../engine/converge/write-ops.js';

/** A sensitive file's content change: without a hint of its content, not even its line counts. */
const SENSITIVE_CHANGE: Change = Object.freeze({ kind: 'content', sensitive: true });

/**
 * The declared bytes. A sealed content is opened here, when the check must compare or the apply write,
 * and held no longer than that: never kept, logged or reported.
 */
function contentOf(r: FileResource, ctx: ConvergeContext): Buffer {
  if (typeof r.content === 'string') return Buffer.from(r.content, r.encoding === 'base64' ? 'base64' : 'utf8');
  const opened = openContent(r.content, ctx);
  if (typeof opened === 'string') throw new Error(`${r.path}: ${opened}`);
  return opened;
}

function openContent(content: SealedValue, ctx: ConvergeContext): Buffer | string {
  if (!ctx.sealing) return 'the content is sealed, but this host has no curve key to open it';
  const opened = ctx.sealing.open(content);
  return Buffer.isBuffer(opened) ? opened : describeOpenProblem(opened);
}

/**
 * The declared content's digest, taken once per resource: the daemon reconciles the same declaration
 * (one parsed object, remembered while its bytes stay the same) again and again, and a declaration is
 * never changed once received. A text is hashed as it stands (its UTF-8 bytes), without a copy. A
 * sensitive file's is keyed (HMAC under the host's own key): the store holds nothing that a guess could
 * be checked against, and equal secrets on two hosts do not match.
 */
const declaredDigests = new WeakMap<FileResource, string>();
function declaredDigest(r: FileResource, ctx: ConvergeContext): string | { problem: string } {
  let digest = declaredDigests.get(r);
  if (digest !== undefined) return digest;
  if (typeof r.content !== 'string') {
    const opened = openContent(r.content, ctx);
    if (typeof opened === 'string') return { problem: opened };
    digest = ctx.sealing!.digest(opened);
  } else if (r.sensitive && ctx.sealing) digest = ctx.sealing.digest(contentOf(r, ctx));
  else digest = r.encoding === 'base64' ? hash('sha256', contentOf(r, ctx), 'base64') : hash('sha256', r.content, 'base64');
  declaredDigests.set(r, digest);
  return digest;
}

function seenOf(st: Stats, digest: string): SeenFile {
  return { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, digest };
}

/** The file is as the host last saw it whole, and the declaration asks for the same content (hashed last: it costs most). */
function unchangedSince(seen: SeenFile | undefined, st: Stats, digest: string): boolean {
  return seen !== undefined && seen.ino === st.ino && seen.size === st.size && seen.mtimeMs === st.mtimeMs && seen.ctimeMs === st.ctimeMs && seen.digest === digest;
}

/** Lines added and removed for text, sizes otherwise; the diff is loaded only when content differs. */
async function contentChange(before: Buffer, after: Buffer): Promise<Change> {
  const text = before.length < 1 << 20 && after.length < 1 << 20 && !before.includes(0) && !after.includes(0);
  if (!text) return { kind: 'content', bytes: { from: before.length, to: after.length } };
  return { kind: 'content', lines: await lineChanges(before.toString('utf8'), after.toString('utf8')) };
}

/** Keeps the original of a taken file under taken/, so that removing the resource gives it back. */
async function keepOriginal(ctx: ConvergeContext, resource: FileResource, st: Stats): Promise<ResourceRecord['original']> {
  const copy = createHash('sha256').update(resource.path).digest('hex');
  mkdirSync(ctx.takenDir, { recursive: true, mode: 0o700 });
  // Durable before the batch that replaces the file is staged: the original is never lost. Its fsyncs
  // wait on libuv's threads: taking over a machine's many files must not stall the event loop.
  await writeDurablyAsync(join(ctx.takenDir, copy), ctx.fs.readFile(resource.path, st.size), 0o600);
  return { kind: 'file', mode: st.mode & 0o7777, uid: st.uid, gid: st.gid, copy };
}

/** What a check found a file's drift to be, against which look of it: the apply reuses it when the file looks the same. */
interface DriftMemo {
  look: string;
  digest: string;
  drift: Drift;
}

/** Everything lstat says that a change of the file (content, mode, owner, links) would move. */
const fingerprintOf = (st: Stats) => `${st.ino}:${st.dev}:${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.mode}:${st.uid}:${st.gid}:${st.nlink}`;

export const fileHandler: ResourceHandler<FileResource> = {
  ...pathShape<FileResource>(true),
  /**
   * Synchronous for the no-op path (a file of ours, unchanged since the host last saw it whole, its mode
   * and owner as asked: one lstat, a few comparisons, a digest of the declared text, nothing made);
   * everything else is the same function's asynchronous rest.
   */
  converge(resource, ctx, apply, planned): Checked | Promise<Checked> {
    const want = wantedMeta(resource, ctx.accounts);
    if (typeof want === 'string') return checkedOf(resource, resource.path, 'none', [], { problem: want });
    const digest = declaredDigest(resource, ctx);
    if (typeof digest !== 'string') return checkedOf(resource, resource.path, 'none', [], digest);
    let st: Stats | undefined;
    try {
      st = lookAt(resource.path, ctx, apply, planned);
    } catch (err) {
      if (err instanceof PathRefused) return checkedOf(resource, resource.path, 'none', [], { problem: err.message });
      throw err;
    }
    if (st !== undefined && st.isFile() && st.nlink === 1 && metaMatches(st, want)) {
      const record = ownRecord(ctx, resource.id, 'file', resource.path);
      if (record !== undefined && unchangedSince(record.seen, st, digest)) return UNCHANGED;
    }
    return convergeFound(resource, ctx, apply, planned, want, st, digest);
  },

  async remove(record, ctx, apply): Promise<Checked> {
    const removed = (more?: Omit<Checked, 'step' | 'verb'>) => checkedOf(record, record.target, 'remove', [REMOVE], more);
    let st: Stats | undefined;
    try {
      st = ctx.fs.lstat(record.target);
    } catch (err) {
      if (err instanceof PathRefused) return checkedOf(record, record.target, 'none', [REMOVE], { problem: err.message });
      throw err;
    }
    if (record.original?.copy !== undefined) {
      const original = record.original;
      const copyPath = join(ctx.takenDir, original.copy!);
      if (apply) {
        const change = ctx.writes.change(record.id);
        change.writeFile(record.target, readFileSync(copyPath), original, { creates: st === undefined });
        change.whenDurable(() => {
          ctx.store.forget(record.id);
          // Only once the store no longer names it: a crash before that save must still find the copy.
          ctx.store.onSaved(() => unlinkSync(copyPath));
        });
      }
      return checkedOf(record, record.target, 'remove', [REMOVE, { kind: 'give-back', what: 'original' }], { detail: 'the original taken over is given back' });
    }
    if (st === undefined) {
      if (apply) ctx.store.forget(record.id);
      return removed({ detail: 'already gone' });
    }
    if (!st.isFile()) {
      if (apply) ctx.store.forget(record.id);
      return checkedOf(record, record.target, 'leave', [LEAVE], { detail: `${record.target} is no longer a regular file the host wrote; left as it is` });
    }
    if (apply) {
      const change = ctx.writes.change(record.id);
      change.removeFile(record.target);
      change.whenDurable(() => ctx.store.forget(record.id));
    }
    return removed();
  },
};

/** The check and apply of a file that is not simply as declared: missing, found, drifted, or not seen whole yet. */
async function convergeFound(resource: FileResource, ctx: ConvergeContext, apply: boolean, planned: Checked | undefined, want: Wanted, st: Stats | undefined, digest: string): Promise<Checked> {
  const path = resource.path;
  const checked = (verb: Checked['verb'], changes: readonly Change[], more?: Omit<Checked, 'step' | 'verb'>) => checkedOf(resource, path, verb, changes, more);
  const look = lookOf(ctx, st);
  let bytes: Buffer | undefined;
  const content = () => (bytes ??= contentOf(resource, ctx));
  const record = ownRecord(ctx, resource.id, 'file', path);
  /** Stages the write; the record is made once the file is durably there, with how it looks then. */
  const write = (w: Wanted, creates: boolean, record: (seen: SeenFile) => ResourceRecord, original?: TakenOriginal) => {
    const change = ctx.writes.change(resource.id);
    change.writeFile(path, content(), w, { creates, ...(original ? { original } : {}) });
    change.whenDurable((done) => ctx.store.record(record(seenOf(done.statOf(path)!, digest))));
    ctx.changed.add(resource.id, path);
  };

  if (st === undefined) {
    if (apply) write(want, true, (seen) => ({ id: resource.id, type: 'file', target: path, origin: ctx.origin, created: true, seen, appliedAt: ctx.now() }));
    return checked('create', [CREATE], { look });
  }
  const found = st;
  /**
   * Brings a found file to what is declared: only its mode and owner when the content is already right
   * (a chmod and an fsync, not a whole new file), else the content written whole.
   */
  const mend = (drift: Drift, record: (seen: SeenFile) => ResourceRecord, original?: TakenOriginal) => {
    if (drift.content || !found.isFile() || found.nlink > 1) return write(want, false, record, original);
    const change = ctx.writes.change(resource.id);
    change.setMeta(path, want, 'file', original ? { original } : undefined);
    change.whenDurable((done) => ctx.store.record(record(seenOf(done.statOf(path)!, digest))));
    // A service that restarts on this file restarts on its mode and owner too, as when it was written whole.
    ctx.changed.add(resource.id);
  };
  /** The drift the plan found, when the file looks as it did then; read and compared otherwise. */
  const driftOf = async (): Promise<Drift> => {
    const memo = planned?.memo as DriftMemo | undefined;
    if (apply && memo && memo.look === fingerprintOf(found) && memo.digest === digest) return memo.drift;
    return drifted(resource, ctx, found, content(), want);
  };
  const memo = (drift: Drift): DriftMemo => ({ look: fingerprintOf(found), digest, drift });
  if (st.isSymbolicLink() && !record) {
    return checked('none', [], { problem: `${path} is a symbolic link (to ${ctx.fs.readlink(path)}), not followed` });
  }
  if (!st.isFile() && !st.isSymbolicLink()) {
    return checked('none', [], { problem: `${path} is not a regular file` });
  }

  if (!record) {
    const verdict = foundVerdict(resource, ctx);
    if (verdict === 'hold') return checked('hold', [HOLD], { detail: HELD_REASON });
    const drift = await driftOf();
    if (apply) {
      const original = await keepOriginal(ctx, resource, st);
      const taken = (seen: SeenFile): ResourceRecord => ({ id: resource.id, type: 'file', target: path, origin: ctx.origin, created: false, original, seen, appliedAt: ctx.now() });
      if (drift.changes.length > 0) mend(drift, taken, { mode: original!.mode, uid: original!.uid, gid: original!.gid, copy: join(ctx.takenDir, original!.copy!) });
      else ctx.store.record(taken(seenOf(st, digest)));
    }
    return checked('take', [TAKE, ...drift.changes], { detail: 'found here; taken over, the original kept', memo: memo(drift), look });
  }

  // Ours: maintained, not set once; drift is returned. (Unchanged since last seen whole was answered before.)
  const drift: Drift = st.isSymbolicLink() ? { changes: [{ kind: 'symlink-replaced' }], content: true } : await driftOf();
  if (drift.changes.length === 0) {
    // Read whole and found as declared (touched, or not seen yet): the apply remembers how it looks now.
    return checked('none', [], { remember: { ...record, seen: seenOf(st, digest) } });
  }
  if (apply) mend(drift, (seen) => ({ ...record, origin: ctx.origin, seen, appliedAt: ctx.now() }));
  return checked('update', drift.changes, { memo: memo(drift), look });
}

/** A found file's drift: the plan's changes, and whether its content differs (else mode and owner alone are set). */
interface Drift {
  changes: Change[];
  content: boolean;
}

async function drifted(resource: FileResource, ctx: ConvergeContext, st: Stats, content: Buffer, want: Wanted): Promise<Drift> {
  const changes: Change[] = [];
  const current = st.size === content.length ? ctx.fs.readFile(resource.path, st.size) : undefined;
  const differs = current === undefined || !current.equals(content);
  if (differs) {
    // A sensitive file's change is said without a hint of its content, not even its line counts.
    changes.push(resource.sensitive ? SENSITIVE_CHANGE : await contentChange(current ?? ctx.fs.readFile(resource.path, st.size), content));
  }
  changes.push(...metaDrift(st, want, ctx.accounts));
  // A hard link planted at the name would share our inode: the write replaces the name, never the inode.
  if (st.nlink > 1) changes.push({ kind: 'hard-link', names: st.nlink });
  return { changes, content: differs };
}
