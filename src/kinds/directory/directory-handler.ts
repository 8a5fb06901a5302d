import type { Stats } from 'node:fs';
import type { DirectoryResource } from '../../core/declaration/schema.js';
import { foundVerdict, HELD_REASON, lookOf, metaDrift, metaMatches, observe, ownRecord } from '../../engine/converge/ownership.js';
import { PathRefused } from '../../engine/converge/rooted-fs.js';
import { checkedOf, pathShape, UNCHANGED, type Checked, type ResourceHandler } from '../../engine/converge/handler-types.js';
import { CREATE, HOLD, LEAVE, REMOVE, TAKE, type Change } from '../../engine/converge/changes.js';

export const directoryHandler: ResourceHandler<DirectoryResource> = {
  ...pathShape<DirectoryResource>(true),
  /** Synchronous: a directory's check is one lstat and a few comparisons. */
  converge(resource, ctx, apply, planned): Checked {
    const path = resource.path;
    const checked = (verb: Checked['verb'], changes: Change[], more?: Omit<Checked, 'step' | 'verb'>) => checkedOf(resource, path, verb, changes, more);
    const seen = observe(resource, ctx, apply, planned);
    if ('problem' in seen) return checked('none', [], { problem: seen.problem });
    const { want, st } = seen;
    // The no-op path: ours, as asked.
    if (st !== undefined && st.isDirectory() && metaMatches(st, want) && ownRecord(ctx, resource.id, 'directory', path)) return UNCHANGED;
    const look = lookOf(ctx, st);
    if (st === undefined) {
      if (apply) {
        const change = ctx.writes.change(resource.id);
        change.makeDirectory(path, want);
        change.whenDurable(() => ctx.store.record({ id: resource.id, type: 'directory', target: path, origin: ctx.origin, created: true, appliedAt: ctx.now() }));
      }
      return checked('create', [CREATE], { look });
    }
    if (st.isSymbolicLink()) return checked('none', [], { problem: `${path} is a symbolic link (to ${ctx.fs.readlink(path)}), not followed` });
    if (!st.isDirectory()) return checked('none', [], { problem: `${path} exists and is not a directory` });

    const drift = metaDrift(st, want, ctx.accounts);
    const record = ownRecord(ctx, resource.id, 'directory', path);
    if (!record) {
      if (foundVerdict(resource, ctx) === 'hold') return checked('hold', [HOLD], { detail: HELD_REASON });
      if (apply) {
        const change = ctx.writes.change(resource.id);
        const original = { kind: 'directory' as const, mode: st.mode & 0o7777, uid: st.uid, gid: st.gid };
        if (drift.length > 0) change.setMeta(path, want, 'directory', { original: { mode: original.mode, uid: original.uid, gid: original.gid } });
        change.whenDurable(() => ctx.store.record({ id: resource.id, type: 'directory', target: path, origin: ctx.origin, created: false, original, appliedAt: ctx.now() }));
      }
      return checked('take', [TAKE, ...drift], { detail: 'found here; taken over, its mode and owner kept', look });
    }
    if (drift.length === 0) return checked('none', []);
    if (apply) {
      const change = ctx.writes.change(resource.id);
      change.setMeta(path, want, 'directory');
      change.whenDurable(() => ctx.store.record({ ...record, origin: ctx.origin, appliedAt: ctx.now() }));
    }
    return checked('update', drift, { look });
  },

  async remove(record, ctx, apply): Promise<Checked> {
    let st: Stats | undefined;
    try {
      st = ctx.fs.lstat(record.target);
    } catch (err) {
      if (err instanceof PathRefused) return checkedOf(record, record.target, 'none', [], { problem: err.message });
      throw err;
    }
    if (st === undefined || !st.isDirectory()) {
      if (apply) ctx.store.forget(record.id);
      return checkedOf(record, record.target, 'remove', [REMOVE], { detail: 'already gone' });
    }
    if (record.original) {
      const { mode, uid, gid } = record.original;
      if (apply) {
        const change = ctx.writes.change(record.id);
        change.setMeta(record.target, { mode, uid, gid }, 'directory');
        change.whenDurable(() => ctx.store.forget(record.id));
      }
      return checkedOf(record, record.target, 'remove', [REMOVE, { kind: 'give-back', what: 'mode and owner' }], { detail: 'taken over: left in place with its original mode and owner' });
    }
    if (!apply) {
      // The plan cannot know whether the removals before it empty the directory; the apply says.
      return checkedOf(record, record.target, 'remove', [REMOVE]);
    }
    const change = ctx.writes.change(record.id);
    change.removeDirectory(record.target);
    change.whenDurable((done) => {
      ctx.store.forget(record.id);
      if (done.left.length > 0) return { verb: 'leave', changes: [LEAVE], detail: `${record.target} holds what others put there; left in place` };
    });
    return checkedOf(record, record.target, 'remove', [REMOVE]);
  },
};
