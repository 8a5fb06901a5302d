import type { Sealing } from '../../core/declaration/sealed.js';
import type { Subject } from '../../core/system/errors.js';
import type { Stats } from 'node:fs';
import type { Mode, Resource, ResourceType } from '../../core/declaration/schema.js';
import type { Store } from '../../core/store/store.js';
import type { Origin, ResourceRecord } from '../../core/store/state.js';
import type { Logger } from '../../core/system/log.js';
import type { Accounts } from './unix-accounts.js';
import type { RootedFs } from './rooted-fs.js';
import type { WriteBatch } from './write-batch.js';
import type { Amendment } from './write-commit.js';
import { NO_CHANGES, type Change } from './changes.js';
import type { LockNote } from '../inhibit/defer.js';
import type { LockReader } from '../inhibit/inhibit-lock.js';

/** What a check decided for one resource: the word a step's line leads with. */
export type Verb = 'create' | 'update' | 'take' | 'hold' | 'remove' | 'leave' | 'none';

/** One step of a plan, as data: what it does (`verb`) and each thing it changes; no changes means nothing to do. */
export interface Step {
  resource: string;
  type: ResourceType;
  target: string;
  verb: Verb;
  changes: readonly Change[];
}

/** `deferred`: a restart or replacement held off by the resource's lock (its `lock` says by whom). */
export type StepStatus = 'done' | 'unchanged' | 'failed' | 'skipped' | 'held' | 'deferred';

export interface StepResult extends Step {
  status: StepStatus;
  detail?: string;
  /** What the resource's lock did to this step: held it off, was stale, was waited on past its bound, was released. */
  lock?: LockNote;
}

export interface Checked {
  /** Absent for a resource found exactly as declared (UNCHANGED): its step is made from the resource when asked for. */
  step?: Step;
  verb: Verb;
  /** Something that stops this step being applied (a link in the way, an unknown owner). */
  problem?: string;
  /** What the problem names, whole (an archive's entry or link text, which its message may cut). */
  subject?: Subject;
  /** Said in the report beside the step (what was held, what was left). */
  detail?: string;
  /** What the resource's lock did to its restart or replacement; `held`: that part of the step is deferred. */
  lock?: LockNote;
  /**
   * A record the check would refresh (a file read whole and found as declared: how it looks now).
   * The check writes nothing: the apply records it, so a dry run leaves the store as it was.
   */
  remember?: ResourceRecord;
  /**
   * What the check learned that the apply may reuse when the thing still looks the same (a file's drift:
   * read and diffed once, not again at the apply). The handler's own business.
   */
  memo?: unknown;
  /**
   * What the check's lstat found, for the apply's second look at a step that changes something: it
   * stands while no batch of this apply has committed since (RootedFs.generation is the same).
   */
  look?: Look;
}

/** One lstat of a declared path, and the RootedFs generation it was made in. */
export interface Look {
  st: Stats | undefined;
  generation: number;
}

/**
 * What a check says of a resource found exactly as declared: one shared value, so that a no-op over
 * 10,000 files makes no object per file for its plan. The step is made from the resource when asked for.
 */
export const UNCHANGED: Checked = Object.freeze({ verb: 'none' as const });


/**
 * What this apply changed so far, for the resources that act on others' changes (a service's
 * restartOn, a daemon-reload for a changed unit file): which resources changed, and the paths they
 * changed on the machine. A handler that changes something says so here; any handler may read it.
 */
export class ChangeSet {
  private readonly ids = new Set<string>();
  private readonly changedPaths: string[] = [];

  /** `path`: what the change rewrote on the machine (none for a change of mode or owner alone). */
  add(resource: string, path?: string): void {
    this.ids.add(resource);
    if (path !== undefined) this.changedPaths.push(path);
  }

  has(resource: string): boolean {
    return this.ids.has(resource);
  }

  get paths(): readonly string[] {
    return this.changedPaths;
  }
}

/** What converging (or removing) needs, passed in. It names no resource kind: a kind's own needs are its handler's. */
export interface ConvergeContext {
  fs: RootedFs;
  /** Every change an apply makes on the machine is staged here and made durable together. */
  writes: WriteBatch;
  store: Store;
  accounts: Accounts;
  log: Logger;
  origin: Origin;
  mode: Mode;
  /** Originals of taken things are kept here (state-dir/taken). */
  takenDir: string;
  now: () => string;
  /** Paths whose records this apply removes first: a plan reads them as already gone. */
  removing: Set<string>;
  /** What this apply changed so far (restartOn reads it). */
  changed: ChangeSet;
  /** Reads a lock a resource names (inhibitWhile), under the host's root. */
  locks: LockReader;
  /** The directories this declaration declares (set by the plan): a path's parent that is neither on the machine nor here cannot be made. */
  declaredDirectories?: ReadonlySet<string>;
  /** Opens values sealed to this host and digests them under its own key; absent where the host has no curve key. */
  sealing?: Sealing;
}

/** What a handler's look after the steps found: failures fail their steps; `said` goes into the report. */
export interface Verified {
  failures: Array<{ resource: string; message: string }>;
  said?: string[];
}

/** What the engine knows of a kind without loading its code: where its resources sit, and when they go. */
export interface HandlerShape<R extends Resource = Resource> {
  /** Where a resource sits on the machine (a path, a unit): its record's target. */
  target(resource: R): string;
  /**
   * Removals run in rank order, lowest first (services stop before the files they read go); within a
   * rank, the deepest target first (what is inside a directory goes before the directory).
   */
  removalRank: number;
  /**
   * When its resources are checked and applied, lowest first, each rank in the declaration's order
   * (default PATH_RANK): accounts come before the files they own.
   */
  applyRank?: number;
  /**
   * The handler's apply writes only through `ctx.writes`. Without it, the batch is committed before
   * the handler applies (a service restarted for a file must find the file durably there).
   */
  batched?: boolean;
}

/** The rank of what lives at a path (files, directories, archives); what runs (services) goes first, at 0. */
export const PATH_RANK = 1;

/** The shape of a kind whose resources sit at a declared path. */
export const pathShape = <R extends Resource & { path: string }>(batched?: true): HandlerShape<R> => ({
  target: (resource) => resource.path,
  removalRank: PATH_RANK,
  ...(batched ? { batched } : {}),
});

/**
 * One function per resource kind checks and, when asked to, applies: the plan is the check alone,
 * so a plan can never promise what the apply does not do (mgmt's CheckApply). The engine
 * (engine/converge/converge.ts) holds a table of these and knows nothing else of any kind.
 *
 * How a new kind plugs in: a folder src/kinds/KIND/ and one line in each half of the registry.
 * 1. KIND-spec.ts, what a declaration may say of it: its schema (`type` its name), the field that places
 *    it and the rules the schema cannot say (core/vocabulary/kind-spec.ts), the changes only it makes
 *    with their words, and what the store keeps of it beyond every record's fields. One line in
 *    src/kinds/kind-specs.ts lists it: the schema's union, the validation and the words read it there.
 * 2. Its handler: a factory taking what the kind needs from the host (a client, a state directory, a
 *    clock) and returning a `ResourceHandler` — `target` and `removalRank` say where its resources sit
 *    and when they go; `prepare` reads once before the check (one batched query of everything declared
 *    and removed) and may refuse the whole apply; `converge` and `remove` check and, with `apply`, act
 *    (batched handlers stage writes in `ctx.writes`, others act themselves); `verify` looks once after
 *    every step. State kept for one apply is keyed by its `ctx`. What it changes that others may act on
 *    goes into `ctx.changed`; what it changes on the machine goes into the store's records.
 * 3. KIND-kind.ts, its code as the host reaches it: the handler made from the host's parts (behind
 *    `lazyHandler` when its code is heavy, so that an apply without it never loads it) and its watcher
 *    between applies. One line in src/kinds/kind-handlers.ts lists it.
 */
export interface ResourceHandler<R extends Resource = Resource> extends HandlerShape<R> {
  /**
   * `planned`: what the plan's check of this resource said, when the apply carries it out. May answer
   * without a promise: the check of a file found as declared is synchronous, and 10,000 of them should
   * not pay a promise and a turn of the microtask queue each.
   */
  converge(resource: R, ctx: ConvergeContext, apply: boolean, planned?: Checked): Checked | Promise<Checked>;
  remove(record: ResourceRecord, ctx: ConvergeContext, apply: boolean): Checked | Promise<Checked>;
  /**
   * Before the check, once per apply, called only when the apply has resources of this kind or removes
   * records of it: reads what the kind needs (services: one batched unit query). Answers why the apply
   * cannot go on at all (no service manager), or nothing.
   */
  prepare?(resources: R[], removing: ResourceRecord[], ctx: ConvergeContext): Promise<string | undefined>;
  /** Read once the steps are done (the services' second look): failures fail their steps. */
  verify?(ctx: ConvergeContext): Promise<Verified | undefined>;
}

/**
 * A handler whose code loads at its first use: an apply without resources of its kind never loads it
 * (the services' XState, the archives' node-tar). `verify` asks only a handler that was used.
 */
export function lazyHandler<R extends Resource>(shape: HandlerShape<R>, load: () => Promise<ResourceHandler<R>>): ResourceHandler<R> {
  let loaded: Promise<ResourceHandler<R>> | undefined;
  const handler = () => (loaded ??= load());
  return {
    ...shape,
    converge: async (resource, ctx, apply, planned) => (await handler()).converge(resource, ctx, apply, planned),
    remove: async (record, ctx, apply) => (await handler()).remove(record, ctx, apply),
    prepare: async (resources, removing, ctx) => (await handler()).prepare?.(resources, removing, ctx),
    verify: async (ctx) => (loaded ? (await loaded).verify?.(ctx) : undefined),
  };
}

export type { Amendment };

export function stepOf(resource: Resource | ResourceRecord, target: string, verb: Verb, changes: readonly Change[]): Step {
  return { resource: resource.id, type: resource.type, target, verb, changes: changes.length === 0 ? NO_CHANGES : changes };
}

/** A check's answer with its step: the verb said once, for both. */
export function checkedOf(resource: Resource | ResourceRecord, target: string, verb: Verb, changes: readonly Change[], more: Omit<Checked, 'step' | 'verb'> = {}): Checked {
  return { step: stepOf(resource, target, verb, changes), verb, ...more };
}
