import type { Subject } from '../../core/system/errors.js';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ArchiveResource } from '../../core/declaration/schema.js';
import { ArchiveCache } from './cache.js';
import { dropJournal, journaledArchives, readJournal, type Journal } from './journal.js';
import { joinTarget } from './local-path.js';
import type { ArchiveLimits } from '../../core/config/archive-limits.js';
import type { ArchiveObjectsProvider } from './objects.js';
import type { Clock } from '../../core/system/clock.js';
import { obtainArchive, type ArchiveEnv } from './obtain.js';
import { readArchive, type Manifest } from './archive-read.js';
import { ArchiveRefused } from './refusal.js';
import { look, type Owner, type TargetWrites } from './target.js';
import { driftOf, type Drift } from './drift.js';
import { keptCopies, stageRemoval } from './removal.js';
import { preflight, unpack } from './unpack.js';
import type { ResourceRecord } from '../../core/store/state.js';
import { foundVerdict, HELD_REASON, metaDrift, ownRecord } from '../../engine/converge/ownership.js';
import { checkedOf, pathShape, type Checked, type ConvergeContext, type ResourceHandler } from '../../engine/converge/handler-types.js';
import { CREATE, HOLD, REMOVE, type Change } from '../../engine/converge/changes.js';

/** The target directory itself: 0755, the resource's owner and group (root by default). */
const TARGET_MODE = 0o755;
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function ownerOf(resource: ArchiveResource, ctx: ConvergeContext): Owner | string {
  const uid = ctx.accounts.uid(resource.owner ?? 'root');
  if (uid === undefined) return `owner '${resource.owner}' does not exist on this machine`;
  const gid = ctx.accounts.gid(resource.group ?? 'root');
  if (gid === undefined) return `group '${resource.group}' does not exist on this machine`;
  return { uid, gid };
}

/** A refusal of the archive or its journal is the step's problem (with what it names, whole); anything else is a fault. */
function asProblem(err: unknown): Problem {
  if (err instanceof ArchiveRefused) return { problem: err.message, subject: err.subject };
  if ((err as Error).name === 'PathRefused') return { problem: (err as Error).message };
  throw err;
}

type Problem = { problem: string; subject?: Subject };

function isEmptyDirectory(ctx: ConvergeContext, target: string): boolean {
  // Read only: the target was just lstat'd through the rooted checks (a directory, no link on the way).
  return readdirSync(join(ctx.fs.root, target)).length === 0;
}

function sourceWords(resource: ArchiveResource): string {
  return 'object' in resource.source ? `object '${resource.source.object}'` : 'inline';
}

/** What archives need from the host: where they are kept and journaled, their bounds, the archive store when there is a link. */
export interface ArchiveHost {
  stateDir: string;
  limits: ArchiveLimits;
  /** The archive store, asked at each apply (genesis points the link at the bundle's first); none without a link. */
  objects: () => ArchiveObjectsProvider | undefined;
  clock: Clock;
}

/** The archive handler over the host's archive store and state directory. */
export function archiveHandler(host: ArchiveHost): ResourceHandler<ArchiveResource> {
  const envOf = (): ArchiveEnv => {
    const objects = host.objects();
    return { stateDir: host.stateDir, limits: host.limits, clock: host.clock, ...(objects ? { objects } : {}) };
  };
  return {
    ...pathShape<ArchiveResource>(),
    converge: (resource, ctx, apply) => converge(resource, ctx, apply, envOf()),
    remove: (record, ctx, apply) => remove(record, ctx, apply, envOf()),
  };
}

/** Drift as changes: the archive's links made again (relink), the rest restored; the first five of each named. */
function restoring(drift: Drift[]): Change[] {
  const links = drift.filter((d) => d.link);
  const rest = drift.filter((d) => !d.link);
  return [
    ...(rest.length ? [{ kind: 'restore' as const, entries: rest.length, drift: rest.slice(0, 5).map(({ name, why }) => ({ name, why })) }] : []),
    ...(links.length ? [{ kind: 'relink' as const, entries: links.length, links: links.slice(0, 5).map((d) => ({ name: d.name, ...d.link! })) }] : []),
  ];
}

async function converge(resource: ArchiveResource, ctx: ConvergeContext, apply: boolean, env: ArchiveEnv): Promise<Checked> {
  const target = resource.path;
  const checked = (verb: Checked['verb'], changes: Change[], more?: Omit<Checked, 'step' | 'verb'>) => checkedOf(resource, target, verb, changes, more);
  const refuse = (problem: string | Problem): Checked => checked('none', [], typeof problem === 'string' ? { problem } : problem);
  const owner = ownerOf(resource, ctx);
  if (typeof owner === 'string') return refuse(owner);
  let journal: Journal | undefined;
  try {
    journal = readJournal(env.stateDir, target);
  } catch (err) {
    return refuse(asProblem(err));
  }
  const seen = ctx.removing.has(target) && !apply ? { st: undefined } : look(ctx.fs, target);
  if ('problem' in seen) return refuse(seen.problem);
  const st = seen.st;
  if (st?.isSymbolicLink()) return refuse(`${target} is a symbolic link (to ${ctx.fs.readlink(target)}), not followed`);
  if (st && !st.isDirectory()) return refuse(`${target} exists and is not a directory`);
  const record = ownRecord(ctx, resource.id, 'archive', target);
  const keepRecord = (created: boolean) => {
    if (apply) ctx.store.record({ id: resource.id, type: 'archive', target, origin: ctx.origin, created, appliedAt: ctx.now() } satisfies ResourceRecord);
  };

  // The same archive, unpacked whole: stat, compare, move on; drift is restored.
  if (journal?.complete && journal.sha256 === resource.sha256 && st) {
    const targetDrift = metaDrift(st, { mode: TARGET_MODE, ...owner }, ctx.accounts);
    const { drift, problems } = driftOf(ctx.fs, target, journal, owner);
    if (problems.length > 0) return refuse(problems.join('; '));
    if (drift.length === 0 && targetDrift.length === 0) {
      if (!record) keepRecord(journal.created);
      return checked('none', []);
    }
    const changes: Change[] = [...targetDrift, ...restoring(drift)];
    if (!apply) return checked('update', changes);
    return carryOut(resource, ctx, env, owner, journal, changes, 'update');
  }

  // A new archive here: first unpack, a replacement, or an unpack a crash cut short.
  const found = st !== undefined && !journal && !isEmptyDirectory(ctx, target);
  if (found && foundVerdict(resource, ctx) === 'hold') return checked('hold', [HOLD], { detail: HELD_REASON });
  const verb = journal ? 'update' : st ? 'take' : 'create';
  const changes: Change[] = [];
  if (!st) changes.push(CREATE);
  if (journal && journal.sha256 !== resource.sha256) changes.push({ kind: 'replace', fields: ['sha256'], from: journal.sha256, to: resource.sha256 });
  else if (journal) changes.push({ kind: 'finish-unpack', sha256: resource.sha256 });
  let manifest: Manifest | undefined;
  try {
    // A plan fetches nothing: an archive known without the link (inline, kept) is read and checked now.
    const known = await obtainArchive(env, resource.source, resource.sha256, false);
    if (known) manifest = await readArchive(known.bytes, env.limits);
  } catch (err) {
    return refuse(asProblem(err));
  }
  if (manifest) {
    const { problems } = preflight(ctx.fs, target, manifest, journal);
    if (problems.length > 0) return refuse(problems.join('; '));
    const names = new Set(manifest.entries.map((m) => m.name));
    const leaving = journal ? journal.entries.filter((e) => !names.has(e.name)).length : 0;
    const links = manifest.entries.filter((e) => e.type === 'symlink' || e.type === 'hardlink').length;
    changes.push({ kind: 'unpack', sha256: resource.sha256, entries: manifest.entries.length, bytes: manifest.bytes, ...(links ? { links } : {}) }, ...(leaving ? [{ kind: 'remove-entries' as const, entries: leaving, lacking: true as const }] : []));
  } else if (!env.objects) {
    return refuse(new ArchiveRefused('no-link', `${sourceWords(resource)} must be fetched from the archive store, and this host has no link (no servers are configured)`).message);
  } else {
    changes.push({ kind: 'fetch', ...('object' in resource.source ? { object: resource.source.object } : {}) }, { kind: 'unpack', sha256: resource.sha256 });
  }
  if (!apply) return checked(verb, changes, verb === 'take' ? { detail: 'found here; taken over, originals of what the archive overwrites kept' } : {});
  return carryOut(resource, ctx, env, owner, journal, changes, verb);
}

async function remove(record: ResourceRecord, ctx: ConvergeContext, apply: boolean, env: ArchiveEnv): Promise<Checked> {
  const target = record.target;
  const checked = (verb: Checked['verb'], changes: Change[], more?: Omit<Checked, 'step' | 'verb'>) => checkedOf(record, target, verb, changes, more);
  let journal: Journal | undefined;
  try {
    journal = readJournal(env.stateDir, target);
  } catch (err) {
    return checked('none', [], asProblem(err));
  }
  if (!journal) {
    if (apply) ctx.store.forget(record.id);
    return checked('remove', [REMOVE], { detail: 'no journal: nothing unpacked is known, nothing removed' });
  }
  const unreachable = journal.entries.flatMap((e) => {
    const seen = look(ctx.fs, joinTarget(target, e.name));
    return 'problem' in seen ? [seen.problem] : [];
  });
  if (unreachable.length > 0) return checked('none', [], { problem: `${unreachable.join('; ')}; nothing was removed` });
  const changes: Change[] = [REMOVE, { kind: 'remove-entries', entries: journal.entries.length }];
  if (!apply) return checked('remove', changes);
  const writes = batchWrites(ctx, record.id);
  const left: string[] = [];
  stageRemoval(ctx.fs, writes, target, journal.entries, ctx.takenDir, left);
  if (journal.created) writes.removeDirectory(target);
  else if (journal.original) writes.setMeta(target, journal.original, 'directory');
  const done = await writes.flush();
  left.push(...done.left.map((path) => `${path}: holds what others put there; left`));
  for (const copy of keptCopies(journal.entries, ctx.takenDir)) rmSync(copy, { force: true });
  dropJournal(env.stateDir, target);
  new ArchiveCache(env.stateDir).prune(journaledArchives(env.stateDir), env.limits.cacheBytes);
  ctx.store.forget(record.id);
  return checked('remove', changes, left.length ? { detail: left.join('; ') } : {});
}

/**
 * The archive's writes through the apply's write batch. The archive commits its own changes (it is
 * not a batched handler, so the batch holds nothing else when it applies): its journal is saved only
 * once they are durable, and an archive larger than the batch's bounds is written in several commits.
 */
function batchWrites(ctx: ConvergeContext, id: string): TargetWrites {
  let change = ctx.writes.change(id);
  return {
    writeFile: (path, bytes, meta) => change.writeFile(path, bytes, meta),
    makeDirectory: (path, meta) => change.makeDirectory(path, meta),
    setMeta: (path, meta, kind) => change.setMeta(path, meta, kind),
    removeFile: (path) => change.removeFile(path),
    removeDirectory: (path) => change.removeDirectory(path),
    hardLink: (path, existing) => change.hardLink(path, existing),
    symlink: (path, target, owner) => change.symlink(path, target, owner),
    get full() {
      return ctx.writes.full;
    },
    async flush() {
      let outcome: Awaited<ReturnType<TargetWrites['flush']>> = { statOf: () => undefined, left: [], copied: [] };
      change.whenDurable((done) => void (outcome = { statOf: (path) => done.statOf(path), left: [...done.left], copied: [...done.copied] }));
      const { failed } = await ctx.writes.commit();
      change = ctx.writes.change(id);
      const mine = failed.find((f) => f.resource === id);
      if (mine) throw mine.error;
      return outcome;
    },
  };
}

/** Obtains (fetching when needed), verifies, reads and unpacks; a refusal leaves nothing of the archive written. */
async function carryOut(resource: ArchiveResource, ctx: ConvergeContext, env: ArchiveEnv, owner: Owner, journal: Journal | undefined, changes: Change[], verb: Checked['verb']): Promise<Checked> {
  const target = resource.path;
  const obtained = await obtainArchive(env, resource.source, resource.sha256, true);
  let accepted = false;
  try {
    const manifest = await readArchive(obtained!.bytes, env.limits);
    const st = ctx.fs.lstat(target);
    const created = journal?.created ?? st === undefined;
    const original = journal ? journal.original : st ? { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid } : undefined;
    const done = await unpack({
      fs: ctx.fs, writes: batchWrites(ctx, resource.id), target, bytes: obtained!.bytes, sha256: resource.sha256, limits: env.limits, manifest, old: journal, owner,
      targetMode: TARGET_MODE, stateDir: env.stateDir, takenDir: ctx.takenDir, created, ...(original ? { original } : {}),
    });
    accepted = true;
    ctx.store.record({ id: resource.id, type: 'archive', target, origin: ctx.origin, created, appliedAt: ctx.now() });
    if (done.written > 0 || done.removed > 0) ctx.changed.add(resource.id, target);
    const detail = [`${plural(done.written, 'write')}, ${plural(done.removed, 'removal')} (${obtained!.how})`, ...done.left].join('; ');
    return checkedOf(resource, target, verb, changes, { detail });
  } finally {
    obtained?.settle(accepted);
    if (accepted) new ArchiveCache(env.stateDir).prune(journaledArchives(env.stateDir), env.limits.cacheBytes);
  }
}
