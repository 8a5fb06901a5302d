import type { Mark } from '../src/core/declaration/order.js';
import type { Pause, PauseOrder } from './pause.js';

/* The lifecycle's types: what it is told, what it keeps, what its actors give it. */

export type Mode = 'adopted' | 'converged';
export type Ending = 'stop' | 'standAside' | 'move';

/**
 * A delivery the intake checked: its mark, which revision of the node's key it was, and the declaration
 * as checked. The machine orders it by its mark only; the checked declaration rides along, opaque to it,
 * to be kept and then applied by the worker, never received a second time.
 */
export interface Delivery extends Mark {
  revision?: number;
  checked?: CheckedDeclaration;
}

/** The declaration as the intake checked it: the machine sees only its digest (the intake makes it; src/host/daemon/remembered-kept.ts reads it back). */
export interface CheckedDeclaration {
  readonly digest: string;
}

/** A delivery refused before anything was kept: the worker reports it, in its turn, like any other work. */
export interface Refused {
  /** Why, as a kind (`stale` for the order rule; the intake's own, `forged` say, for what did not verify). */
  kind: 'stale' | 'forged' | 'retired' | 'unapproved' | 'wrong-node' | 'invalid' | 'unsupported' | 'mode' | 'state' | 'unappliable';
  message: string;
  /** The delivery, when the machine ordered it and refused it. */
  delivery?: Delivery;
}

/** A value of the node's key: which revision, holding what. */
export type KeyValue = { revision: number; digest: string };

/**
 * The one pending slot: a delivery, or a reconcile of the kept declaration. A reconcile asked for by a
 * watcher carries what it found, to be said in the report.
 */
export type Pending = { kind: 'delivery'; delivery: Delivery } | { kind: 'reconcile'; found?: string[] };

/** What the worker takes: the pending apply, or the refusals waiting to be reported (taken first). */
export type Work = Pending | { kind: 'refusals'; refused: Refused[] };

/**
 * A restart or replacement an apply held off while a lock was held: which resource, which lock (a path
 * on the host), and in how long its bound runs out (by the teller's clock), when it goes ahead anyway.
 */
export interface DeferredLock {
  resource: string;
  lock: string;
  endsInMs: number;
}

/** A report made (by the worker or a command run by hand), waiting in the outbox: the outbox tells of it once it may leave. */
export type ReportRef = { sequence: number };

export interface WorkerOutput {
  /** The mode recorded after the apply. */
  mode?: Mode;
  /** The last applied declaration as the store records it after the apply. */
  applied?: Mark;
  /** The store said the host is paused (a pause asked just as the apply began): nothing was applied, the work is given back. */
  paused?: PauseOrder;
  /** What this apply held off for a lock (none: nothing waits); absent when the worker applied nothing. */
  deferred?: DeferredLock[];
}

export interface LoadedStore {
  enrolled: boolean;
  mode?: Mode;
  /** The last applied declaration, as the store records it. */
  applied?: Mark;
  /** The kept declaration, when there is one and it opens. */
  kept?: Mark;
  /** The value of the node's key this host last took (kept, or applied by genesis), as its hint says. */
  keyValue?: KeyValue;
  /** The pause the store keeps, when one stands. */
  paused?: PauseOrder;
  /** What the store keeps held off for a lock: watched from the start. */
  deferred?: DeferredLock[];
  /** The last apply failed (its report, and what it said): tried again at the start. */
  lastFailed?: { report: number; message?: string };
}

/** What the host was started with. */
export interface LifecycleInput {
  /** A genesis bundle to enrol with when the store says the machine is not enrolled (opaque here). */
  bundle?: unknown;
}

export interface LifecycleContext {
  pending?: Pending;
  /** Refusals waiting for the worker to report them, in the order they were decided. */
  refused: Refused[];
  inFlight?: Work;
  /** The newest declaration applied, and the newest kept: deliveries are ordered against them and the queue. */
  applied?: Mark;
  kept?: Mark;
  /** The value of the node's key this host last took: read again, it is not a new delivery. */
  keyValue?: KeyValue;
  ending?: Ending;
  /** Reports told ready and not yet acknowledged, in sequence order, each once. */
  outbox: ReportRef[];
  /** The newest report the mesh acknowledged: a report at or below it was sent already. */
  sentThrough: number;
  mode?: Mode;
  /** The genesis bundle not yet tried. */
  bundle?: unknown;
  /** This host ran genesis with its bundle since it was started. */
  genesisTried?: boolean;
  /** Why the host could not start, when it could not. */
  failure?: string;
  /** The apply in flight outlasted the grace and was left running when the host ended. */
  abandoned?: boolean;
  /** Paused by hand: nothing is applied (refusals are still reported) until it ends. */
  pause?: Pause;
  /** A pause with an end ends by itself this long after it was told. */
  pauseEndsInMs?: number;
  /** What the last apply (or the store, at the start) held off for a lock: its locks are watched. */
  deferred: DeferredLock[];
}

export type LifecycleEvent =
  | { type: 'DELIVERY'; delivery: Delivery }
  /** A value of the key the intake could not take (a signature that does not verify, another node's). */
  | { type: 'REFUSED'; refused: Refused }
  | { type: 'RECONCILE_TICK' }
  /** A watcher saw a unit leave running or an owned path change, between applies. */
  | { type: 'DRIFT_FOUND'; found: string[] }
  | { type: 'LINK_UP' }
  | { type: 'LINK_DOWN' }
  | { type: 'STOP' }
  | { type: 'STAND_ASIDE' }
  | { type: 'MOVE' }
  | { type: 'RESUME' }
  | { type: 'END_REQUESTED' }
  | { type: 'MODE_IS'; mode: Mode }
  /** `mesh-host pause` saved a pause in the store (asked again, it replaces the one standing). */
  | ({ type: 'PAUSE' } & PauseOrder)
  /** `mesh-host resume` removed the pause from the store. */
  | { type: 'UNPAUSE' }
  /**
   * The one way a report reaches the lifecycle: the outbox's watch tells of each report that may leave,
   * once, oldest first (those waiting at the start, each the worker commits, each a command run by hand
   * leaves there).
   */
  | { type: 'REPORT_READY'; report: ReportRef }
  /** What the apply just ended held off for a lock (raised after it; the newest apply decides). */
  | { type: 'DEFERRED'; deferred?: DeferredLock[] }
  /** The lock watcher saw a lock let go: its file gone, or its holder dead. */
  | { type: 'LOCK_RELEASED'; resource: string; lock: string; why: 'gone' | 'dead' };
