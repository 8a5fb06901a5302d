import type { Stats } from 'node:fs';
import type { Mode, Resource, ResourceType } from '../declaration/schema.js';
import type { Store } from '../store/store.js';
import type { Origin, ResourceRecord } from '../store/state.js';
import type { Logger } from '../system/log.js';
import type { Accounts } from './accounts.js';
import type { RootedFs } from './rooted-fs.js';
import type { Amendment, WriteBatch } from './write-batch.js';
import type { ServiceRuntime } from '../services/runtime.js';
import type { ArchiveEnv } from '../archive/obtain.js';

/** One step of a plan: no actions means nothing to do. */
export interface Step {
  resource: string;
  type: ResourceType;
  target: string;
  actions: string[];
}

export type StepStatus = 'done' | 'unchanged' | 'failed' | 'skipped' | 'held';

export interface StepResult extends Step {
  status: StepStatus;
  detail?: string;
}

/** What a check decided for one resource; the verb leads the readable line. */
export type Verb = 'create' | 'update' | 'take' | 'hold' | 'remove' | 'leave' | 'none';

export interface Checked {
  /** Absent for a resource found exactly as declared (UNCHANGED): its step is made from the resource when asked for. */
  step?: Step;
  verb: Verb;
  /** Something that stops this step being applied (a link in the way, an unknown owner). */
  problem?: string;
  /** Said in the report beside the step (what was held, what was left). */
  detail?: string;
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

/** The actions of every unchanged step: one shared, frozen, empty list. */
export const NO_ACTIONS: string[] = Object.freeze([]) as unknown as string[];

/** What converging (or removing) needs, passed in. */
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
  /** Ids of files and archives this apply changed: services naming them in restartOn act on it. */
  changedFiles: Set<string>;
  /** Targets of the files changed by this apply, for daemon-reload. */
  changedPaths: Set<string>;
  /** Where archives are kept, verified and journaled, and how objects are fetched. */
  archives?: ArchiveEnv;
  /** Present when the declaration or the footprint holds services. */
  services?: ServiceRuntime;
}

/**
 * One function per resource type checks and, when asked to, applies: the plan is the check alone,
 * so a plan can never promise what the apply does not do (mgmt's CheckApply).
 */
export interface ResourceHandler<R extends Resource = Resource> {
  /** `planned`: what the plan's check of this resource said, when the apply carries it out. */
  /**
   * May answer without a promise: the check of a file found as declared is synchronous, and 10,000 of
   * them should not pay a promise and a turn of the microtask queue each.
   */
  converge(resource: R, ctx: ConvergeContext, apply: boolean, planned?: Checked): Checked | Promise<Checked>;
  remove(record: ResourceRecord, ctx: ConvergeContext, apply: boolean): Checked | Promise<Checked>;
  /**
   * The handler's apply writes only through `ctx.writes`. Without it, the batch is committed before
   * the handler applies (a service restarted for a file must find the file durably there).
   */
  batched?: boolean;
  /** Read once before the check, for every resource of this type and every record it removes (one batched query). */
  prepare?(resources: R[], removing: ResourceRecord[], ctx: ConvergeContext): Promise<void>;
  /** Read once the steps are done (the services' second look): failures fail their steps. */
  verify?(ctx: ConvergeContext): Promise<Array<{ resource: string; message: string }>>;
}

export type { Amendment };

export function stepOf(resource: Resource | ResourceRecord, target: string, actions: string[]): Step {
  return { resource: resource.id, type: resource.type, target, actions: actions.length === 0 ? NO_ACTIONS : actions };
}
