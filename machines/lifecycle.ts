import { assign, fromCallback, fromPromise, not, raise, setup, type ActorRefFrom } from 'xstate';
import { deliveryRefusal, givenBack, pauseFrom, queued, retriedAtStart } from './lifecycle-queue.js';
import type { PauseOrder } from './pause.js';
import type { DeferredLock, Delivery, Ending, LifecycleContext, LifecycleEvent, LifecycleInput, LoadedStore, Mode, Refused, ReportRef, Work, WorkerOutput } from './lifecycle-types.js';

export type { Pause, PauseOrder } from './pause.js';
export type * from './lifecycle-types.js';
export { deliveryRefusal } from './lifecycle-queue.js';

/** Between applies, the stop waits this long for the apply in flight, then quiesces anyway. */
export const APPLY_GRACE_MS = 60_000;
/** An unenrolled daemon looks again for a genesis this often. */
export const ENROLMENT_RECHECK_MS = 5_000;
/** A report the mesh did not acknowledge is sent again after this long. */
export const REPORT_RETRY_MS = 1_000;

/**
 * The host's life (docs/design.md, "The lifecycle"). Pure: every effect is an actor or action provided to it (`provide`), so
 * the same definition runs with real ones in the daemon and with controllable ones in the model-based
 * tests. Its decisions are its own: which delivery is kept and which refused, what is applied next,
 * which report leaves next.
 */
export const lifecycleMachine = setup({
  types: {
    context: {} as LifecycleContext,
    events: {} as LifecycleEvent,
    input: {} as LifecycleInput,
    output: {} as { ending?: Ending; failure?: string; abandoned?: boolean },
  },
  actors: {
    /** Loads the store under the lock and removes leftover temporary saves. */
    loadStore: fromPromise<LoadedStore>(async () => {
      throw new Error('loadStore is provided by the host');
    }),
    /** Enrols from the genesis bundle the host was given, through the one genesis path. */
    genesis: fromPromise<void, { bundle: unknown }>(async () => {
      throw new Error('genesis is provided by the host');
    }),
    /** The link: watches declarations and sends DELIVERY, LINK_UP and LINK_DOWN. It carries no actions. */
    link: fromCallback(() => () => {}),
    /** Sends RECONCILE_TICK every interval. It only enqueues. */
    reconcileTimer: fromCallback(() => () => {}),
    /** Watches the store's pause and sends PAUSE and UNPAUSE when a command run by hand changes it. */
    pauseWatch: fromCallback(() => () => {}),
    /** Watches the locks of the steps held off (input: them) and sends LOCK_RELEASED when one is let go. It only enqueues. */
    lockWatch: fromCallback<LifecycleEvent, { locks: DeferredLock[] }>(() => () => {}),
    /**
     * The one way a report reaches the machine: tells REPORT_READY of each report the outbox holds that may
     * leave, once, oldest first: those waiting when serving begins, each the worker commits (its head
     * renamed, before the worker ends), each a command run by hand leaves there. It decides nothing.
     */
    outboxWatch: fromCallback(() => () => {}),
    /**
     * Watches the units and the footprint while no apply runs, and sends DRIFT_FOUND. It only enqueues: it
     * lives in the idle worker, so it is stopped when an apply starts and looks afresh when it ends (the
     * host's own writes are never news).
     */
    watchers: fromCallback(() => () => {}),
    /**
     * Applies one pending declaration once (the kept declaration, for a delivery and a reconcile alike)
     * and makes one report (or none, for a silent reconcile); or reports the refusals waiting.
     */
    applyWorker: fromPromise<WorkerOutput, Work>(async () => {
      throw new Error('applyWorker is provided by the host');
    }),
    /** Sends the oldest report and resolves on its acknowledgement. */
    reportSender: fromPromise<void, ReportRef>(async () => {
      throw new Error('reportSender is provided by the host');
    }),
    /** Quiesces the store (no save may start after it); releases the lock and link when standing aside. */
    quiesce: fromPromise<void, { ending: Ending }>(async () => {
      throw new Error('quiesce is provided by the host');
    }),
  },
  guards: {
    enrolled: (_, params: { loaded: LoadedStore }) => params.loaded.enrolled,
    ending: ({ context }) => context.ending !== undefined,
    /** Ending with refusals waiting: they are reported (a quick write, no apply) before the host quiesces, never dropped. */
    endingWithRefusals: ({ context }) => context.ending !== undefined && context.refused.length > 0,
    hasBundle: ({ context }) => context.bundle !== undefined,
    /** Refusals are reported even while paused; an apply waits for the pause to end. */
    hasWork: ({ context }) => (context.pending !== undefined && context.pause === undefined) || context.refused.length > 0,
    paused: ({ context }) => context.pause !== undefined,
    pausedUntil: ({ context }) => context.pause !== undefined && context.pauseEndsInMs !== undefined,
    workerFoundPause: (_, params: { output: WorkerOutput }) => params.output.paused !== undefined,
    hasReports: ({ context }) => context.outbox.length > 0,
    hasDeferred: ({ context }) => context.deferred.length > 0,
    deferredTold: (_, params: { deferred?: DeferredLock[] }) => params.deferred !== undefined,
    isConverged: ({ context }) => context.mode === 'converged',
    modeConverged: (_, params: { mode: Mode }) => params.mode === 'converged',
    modeAdopted: (_, params: { mode: Mode }) => params.mode === 'adopted',
    standingAside: ({ context }) => context.ending === 'standAside',
    moving: ({ context }) => context.ending === 'move',
    /** The value of the key this host kept and applied, read again (after a restart or a move): not a new delivery. */
    alreadyKeptAndApplied: ({ context }, params: { delivery: Delivery }) => {
      const { keyValue, applied } = context;
      const d = params.delivery;
      return d.revision !== undefined && keyValue?.revision === d.revision && keyValue.digest === d.digest && applied?.digest === d.digest;
    },
    outOfOrder: ({ context }, params: { delivery: Delivery }) => deliveryRefusal(context, params.delivery) !== undefined,
  },
  actions: {
    /** Effect: the delivery's bytes written as the kept declaration, before it is applied. */
    writeKept: (_, _params: { delivery: Delivery }) => {},
    /** Effect: said that the value read is the one kept and applied. */
    sayAlreadyKept: (_, _params: { delivery: Delivery }) => {},
    /** The delivery's mark is what is kept: the delivery without the key's revision and the declaration it carries. */
    keep: assign(({ context }, params: { delivery: Delivery }) => {
      const { revision, checked: _checked, ...kept } = params.delivery;
      return { kept, keyValue: revision === undefined ? context.keyValue : { revision, digest: kept.digest } };
    }),
    /** Newest wins: an accepted delivery is never older than what is pending, so it takes the slot. */
    enqueueDelivery: assign({ pending: (_, params: { delivery: Delivery }) => ({ kind: 'delivery' as const, delivery: params.delivery }) }),
    /** A tick never displaces a pending delivery: it asks for the kept declaration only when nothing waits. */
    enqueueReconcile: assign({ pending: ({ context }) => context.pending ?? { kind: 'reconcile' as const } }),
    /** What a watcher found joins a pending reconcile (or asks for one); a pending delivery converges it anyway. */
    enqueueFound: assign({
      pending: ({ context }, params: { found: string[] }) => {
        const held = context.pending;
        if (held?.kind === 'delivery') return held;
        return { kind: 'reconcile' as const, found: [...(held?.found ?? []), ...params.found.filter((f) => !held?.found?.includes(f))] };
      },
    }),
    /** A refusal waits for the worker like any work, and is reported by it: nothing is kept. */
    queueRefusal: assign({ refused: ({ context }, params: { refused: Refused }) => [...context.refused, params.refused] }),
    /** The refusals waiting go first (they report only); then the pending apply. */
    takeWork: assign(({ context }) =>
      context.refused.length > 0 ? { inFlight: { kind: 'refusals' as const, refused: context.refused }, refused: [] } : { inFlight: context.pending, pending: undefined }),
    finishApply: assign(({ context }, params: { output: WorkerOutput }) => ({
      inFlight: undefined,
      mode: params.output.mode ?? context.mode,
      applied: params.output.applied ?? context.applied,
    })),
    failApply: assign({ inFlight: () => undefined }),
    /** The worker found the store paused: nothing was applied, the work waits again; the pause holds from now. */
    giveBack: assign(({ context }, params: { output: WorkerOutput }) => ({
      inFlight: undefined,
      pending: givenBack(context.pending, context.inFlight),
      ...pauseFrom(params.output.paused!),
    })),
    raiseDeferred: raise((_, params: { output: WorkerOutput }) => ({ type: 'DEFERRED' as const, ...(params.output.deferred ? { deferred: params.output.deferred } : {}) })),
    setDeferred: assign({ deferred: (_, params: { deferred: DeferredLock[] }) => params.deferred }),
    /**
     * A lock let go, or a bound run out: one reconcile, saying why, applies what waited (a pending delivery
     * does it anyway). Nothing is watched until that apply says what still waits.
     */
    applyDeferred: assign(({ context }, params: { found: string }) => ({
      deferred: [],
      pending: context.pending?.kind === 'delivery' ? context.pending : { kind: 'reconcile' as const, found: [...(context.pending?.found ?? []), params.found] },
    })),
    raisePause: raise((_, params: { output: WorkerOutput }) => ({ type: 'PAUSE' as const, ...params.output.paused! })),
    pause: assign((_, params: PauseOrder) => pauseFrom(params)),
    unpause: assign({ pause: () => undefined, pauseEndsInMs: () => undefined }),
    sayMode: raise(({ context }) => ({ type: 'MODE_IS' as const, mode: context.mode ?? 'adopted' })),
    sent: assign(({ context }) => ({ outbox: context.outbox.slice(1), sentThrough: Math.max(context.sentThrough, context.outbox[0]?.sequence ?? 0) })),
    queueReport: assign(({ context }, params: { report: ReportRef }) => ({ outbox: queued(context, params.report) })),
    requestStop: assign({ ending: () => 'stop' as const }),
    requestStandAside: assign({ ending: ({ context }) => context.ending ?? ('standAside' as const) }),
    requestMove: assign({ ending: ({ context }) => context.ending ?? ('move' as const) }),
    raiseEnd: raise({ type: 'END_REQUESTED' as const }),
    loaded: assign((_, params: { loaded: LoadedStore }) => {
      const { mode, applied, kept, keyValue, paused, deferred } = params.loaded;
      // What the outbox holds on disk is told again by its watch once serving begins: the queue and the acknowledged mark start again.
      return { mode, outbox: [], applied, kept, keyValue, sentThrough: 0, deferred: deferred ?? [], ...(paused ? pauseFrom(paused) : { pause: undefined, pauseEndsInMs: undefined }) };
    }),
    /** A start after an apply that failed (a genesis' among them) tries it again at once, saying why, not after a tick (but not just after the genesis this host ran itself). */
    retryFailed: assign(({ context }, params: { loaded: LoadedStore }) => ({ pending: context.genesisTried ? context.pending : retriedAtStart(context.pending, params.loaded) })),
    failedToStart: assign({ failure: (_, params: { error: unknown }) => String(params.error) }),
    /** The bundle was tried: its apply, failed or not, was just reported; a failure is tried again at the next start, not now. */
    bundleTried: assign({ bundle: () => undefined, genesisTried: () => true }),
    clearEnding: assign({ ending: () => undefined }),
    abandonApply: assign({ ending: () => 'stop' as const, abandoned: () => true }),
  },
  delays: {
    applyGrace: APPLY_GRACE_MS,
    enrolmentRecheck: ENROLMENT_RECHECK_MS,
    reportRetry: REPORT_RETRY_MS,
    /** A pause with an end: as long as it had left when it was told (by the teller's clock). */
    pauseEnds: ({ context }) => Math.max(0, context.pauseEndsInMs ?? 0),
    /** The first bound of a step held off to run out, from when the apply told it. */
    deferralEnds: ({ context }) => Math.max(0, Math.min(...context.deferred.map((d) => d.endsInMs))),
  },
}).createMachine({
  id: 'host',
  context: ({ input }) => ({ outbox: [], refused: [], sentThrough: 0, deferred: [], ...(input?.bundle !== undefined ? { bundle: input.bundle } : {}) }),
  initial: 'starting',
  output: ({ context }) => ({
    ...(context.ending ? { ending: context.ending } : {}),
    ...(context.failure ? { failure: context.failure } : {}),
    ...(context.abandoned ? { abandoned: true } : {}),
  }),
  states: {
    starting: {
      invoke: {
        id: 'loadStore',
        src: 'loadStore',
        onDone: [
          { guard: 'ending', target: 'quiescing', actions: { type: 'loaded', params: ({ event }) => ({ loaded: event.output }) } },
          {
            guard: { type: 'enrolled', params: ({ event }) => ({ loaded: event.output }) },
            target: 'serving',
            actions: [{ type: 'loaded', params: ({ event }) => ({ loaded: event.output }) }, { type: 'retryFailed', params: ({ event }) => ({ loaded: event.output }) }],
          },
          { target: 'unenrolled', actions: { type: 'loaded', params: ({ event }) => ({ loaded: event.output }) } },
        ],
        onError: { target: 'stopped', actions: { type: 'failedToStart', params: ({ event }) => ({ error: event.error }) } },
      },
      on: { STOP: { actions: 'requestStop' } },
    },
    unenrolled: {
      // Given a bundle, the host enrols itself once; without one (or after it was refused) it waits for
      // a genesis run by hand, looking again every few seconds.
      always: { guard: 'hasBundle', target: 'genesis' },
      after: { enrolmentRecheck: 'starting' },
      on: { STOP: { target: 'quiescing', actions: 'requestStop' } },
    },
    genesis: {
      invoke: {
        id: 'genesis',
        src: 'genesis',
        input: ({ context }) => ({ bundle: context.bundle }),
        // Enrolled: the store, the configuration and the outbox are read again on the way in.
        onDone: [
          { guard: 'ending', target: 'quiescing', actions: 'bundleTried' },
          { target: 'starting', actions: 'bundleTried' },
        ],
        onError: [
          { guard: 'ending', target: 'quiescing', actions: 'bundleTried' },
          { target: 'unenrolled', actions: 'bundleTried' },
        ],
      },
      on: { STOP: { actions: 'requestStop' } },
    },
    serving: {
      type: 'parallel',
      on: {
        STOP: { actions: ['requestStop', 'raiseEnd'] },
        STAND_ASIDE: { actions: ['requestStandAside', 'raiseEnd'] },
        MOVE: { actions: ['requestMove', 'raiseEnd'] },
        // Ordered before anything is touched: a delivery older than what was applied, kept or is
        // pending, or equal in order with another digest, is refused, never kept; the worker reports it.
        DELIVERY: [
          {
            guard: { type: 'alreadyKeptAndApplied', params: ({ event }) => ({ delivery: event.delivery }) },
            actions: { type: 'sayAlreadyKept', params: ({ event }) => ({ delivery: event.delivery }) },
          },
          {
            guard: { type: 'outOfOrder', params: ({ event }) => ({ delivery: event.delivery }) },
            actions: {
              type: 'queueRefusal',
              params: ({ context, event }) => ({ refused: { kind: 'stale', message: `the delivery (revision ${event.delivery.revision}): ${deliveryRefusal(context, event.delivery)}; nothing was touched`, delivery: event.delivery } }),
            },
          },
          {
            actions: [
              { type: 'writeKept', params: ({ event }) => ({ delivery: event.delivery }) },
              { type: 'keep', params: ({ event }) => ({ delivery: event.delivery }) },
              { type: 'enqueueDelivery', params: ({ event }) => ({ delivery: event.delivery }) },
            ],
          },
        ],
        REFUSED: { actions: { type: 'queueRefusal', params: ({ event }) => ({ refused: event.refused }) } },
        // A paused host skips the timer's reconciles; what its watchers find waits for the resume.
        RECONCILE_TICK: { guard: not('paused'), actions: 'enqueueReconcile' },
        DRIFT_FOUND: { actions: { type: 'enqueueFound', params: ({ event }) => ({ found: event.found }) } },
        REPORT_READY: { actions: { type: 'queueReport', params: ({ event }) => ({ report: event.report }) } },
      },
      states: {
        mode: {
          initial: 'reading',
          states: {
            reading: { always: [{ guard: 'isConverged', target: 'converged' }, { target: 'adopted' }] },
            adopted: { on: { MODE_IS: { guard: { type: 'modeConverged', params: ({ event }) => ({ mode: event.mode }) }, target: 'converged' } } },
            converged: { on: { MODE_IS: { guard: { type: 'modeAdopted', params: ({ event }) => ({ mode: event.mode }) }, target: 'adopted' } } },
          },
        },
        link: {
          invoke: { id: 'link', src: 'link' },
          initial: 'down',
          states: {
            down: { on: { LINK_UP: 'up' } },
            up: { on: { LINK_DOWN: 'down' } },
          },
        },
        reconcile: {
          invoke: { id: 'reconcileTimer', src: 'reconcileTimer' },
          initial: 'ticking',
          states: { ticking: {} },
        },
        worker: {
          initial: 'idle',
          states: {
            idle: {
              // Between applies only: an apply's own writes never reach a watcher.
              invoke: { id: 'watchers', src: 'watchers' },
              always: [
                { guard: 'endingWithRefusals', target: 'applying', actions: 'takeWork' },
                { guard: 'ending', target: '#host.quiescing' },
                { guard: 'hasWork', target: 'applying', actions: 'takeWork' },
              ],
            },
            applying: {
              invoke: {
                id: 'applyWorker',
                src: 'applyWorker',
                input: ({ context }) => context.inFlight!,
                onDone: [
                  {
                    guard: { type: 'workerFoundPause', params: ({ event }) => ({ output: event.output }) },
                    target: 'idle',
                    actions: [{ type: 'giveBack', params: ({ event }) => ({ output: event.output }) }, { type: 'raisePause', params: ({ event }) => ({ output: event.output }) }],
                  },
                  {
                    target: 'idle',
                    actions: [{ type: 'finishApply', params: ({ event }) => ({ output: event.output }) }, 'sayMode', { type: 'raiseDeferred', params: ({ event }) => ({ output: event.output }) }],
                  },
                ],
                onError: { target: 'idle', actions: 'failApply' },
              },
              initial: 'running',
              states: {
                // Ending (asked now, or before the refusals waiting were taken to be reported): bounded by the grace.
                running: { always: { guard: 'ending', target: 'draining' } },
                // Ending between applies: the apply in flight is never cancelled; after the grace the
                // host quiesces anyway and the apply's own save is refused. It then stops, whatever
                // ending was asked: standing aside or moving on with an apply still running would let
                // the next apply overlap it. The service manager starts a fresh host.
                draining: { after: { applyGrace: { target: '#host.quiescing', actions: 'abandonApply' } } },
              },
            },
          },
        },
        pause: {
          // Paused by hand: the worker takes no apply (an apply running goes to its end first), ticks are
          // skipped, deliveries are kept, the newest wins; at the end, what waits is applied at once.
          invoke: { id: 'pauseWatch', src: 'pauseWatch' },
          initial: 'reading',
          on: {
            PAUSE: { target: '.reading', actions: { type: 'pause', params: ({ event }) => ({ pause: event.pause, endsInMs: event.endsInMs }) } },
            UNPAUSE: { target: '.unpaused', actions: 'unpause' },
          },
          states: {
            reading: { always: [{ guard: 'pausedUntil', target: 'pausedUntil' }, { guard: 'paused', target: 'paused' }, { target: 'unpaused' }] },
            unpaused: {},
            paused: {},
            pausedUntil: { after: { pauseEnds: { target: 'unpaused', actions: 'unpause' } } },
          },
        },
        deferral: {
          // Steps held off for a lock (a service's restart, a container's replacement): their locks are
          // watched; a lock let go, or the first bound run out, asks for the apply that does them.
          initial: 'reading',
          on: {
            DEFERRED: { guard: { type: 'deferredTold', params: ({ event }) => ({ deferred: event.deferred }) }, target: '.reading', actions: { type: 'setDeferred', params: ({ event }) => ({ deferred: event.deferred! }) } },
          },
          states: {
            reading: { always: [{ guard: 'hasDeferred', target: 'waiting' }, { target: 'none' }] },
            none: {},
            waiting: {
              invoke: { id: 'lockWatch', src: 'lockWatch', input: ({ context }) => ({ locks: context.deferred }) },
              on: {
                LOCK_RELEASED: {
                  target: 'none',
                  actions: { type: 'applyDeferred', params: ({ event }) => ({ found: `lock: ${event.lock} of ${event.resource} was released (${event.why === 'gone' ? 'its file is gone' : 'its holder is dead'}); what it held off is applied` }) },
                },
              },
              after: {
                deferralEnds: { target: 'none', actions: { type: 'applyDeferred', params: { found: 'lock: a step held off by a lock reached its inhibitMaxMs; it is applied now' } } },
              },
            },
          },
        },
        outbox: {
          invoke: { id: 'outboxWatch', src: 'outboxWatch' },
          initial: 'idle',
          states: {
            idle: { always: { guard: 'hasReports', target: 'sending' } },
            sending: {
              invoke: {
                id: 'reportSender',
                src: 'reportSender',
                input: ({ context }) => context.outbox[0]!,
                onDone: { target: 'idle', actions: 'sent' },
                onError: 'retrying',
              },
            },
            retrying: { after: { reportRetry: 'sending' } },
          },
        },
      },
    },
    quiescing: {
      invoke: {
        id: 'quiesce',
        src: 'quiesce',
        input: ({ context }) => ({ ending: context.ending ?? 'stop' }),
        onDone: [
          { guard: 'standingAside', target: 'standingAside' },
          { guard: 'moving', target: 'starting', actions: 'clearEnding' },
          { target: 'stopped' },
        ],
        onError: 'stopped',
      },
      on: { STOP: { actions: 'requestStop' } },
    },
    standingAside: {
      on: {
        RESUME: { target: 'starting', actions: 'clearEnding' },
        STOP: { target: 'stopped', actions: 'requestStop' },
      },
    },
    stopped: { type: 'final' },
  },
});

export type LifecycleActor = ActorRefFrom<typeof lifecycleMachine>;
