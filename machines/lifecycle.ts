import { assign, fromCallback, fromPromise, raise, setup, type ActorRefFrom } from 'xstate';

export type Mode = 'adopted' | 'converged';
export type Ending = 'stop' | 'standAside' | 'move';

/** What the link delivered: enough for the machine to order it; the bytes travel with it, unread here. */
export interface Delivery {
  epoch?: number;
  sequence: number;
  digest: string;
  /** Opaque to the machine: what the worker applies. */
  payload?: unknown;
}

/** The one pending slot: a delivery, or a reconcile of the kept declaration. */
export type Pending = { kind: 'delivery'; delivery: Delivery } | { kind: 'reconcile' };

/** A report made by the worker, waiting in the outbox. */
export interface ReportRef {
  sequence: number;
}

export interface WorkerOutput {
  /** The report made, or none (a reconcile with nothing to say). */
  report?: ReportRef;
  /** The mode recorded after the apply. */
  mode?: Mode;
}

export interface LoadedStore {
  enrolled: boolean;
  mode?: Mode;
  /** Reports made before and not yet acknowledged, oldest first. */
  outbox: ReportRef[];
}

export interface LifecycleContext {
  pending?: Pending;
  inFlight?: Pending;
  ending?: Ending;
  outbox: ReportRef[];
  mode?: Mode;
  /** Why the host could not start, when it could not. */
  failure?: string;
  /** The apply in flight outlasted the grace and was left running when the host ended. */
  abandoned?: boolean;
}

export type LifecycleEvent =
  | { type: 'DELIVERY'; delivery: Delivery }
  | { type: 'RECONCILE_TICK' }
  | { type: 'GENESIS'; bundle: unknown }
  | { type: 'LINK_UP' }
  | { type: 'LINK_DOWN' }
  | { type: 'STOP' }
  | { type: 'STAND_ASIDE' }
  | { type: 'MOVE' }
  | { type: 'RESUME' }
  | { type: 'END_REQUESTED' }
  | { type: 'MODE_IS'; mode: Mode }
  /** A report made outside the worker (a refused delivery), waiting in the outbox. */
  | { type: 'REPORT_MADE'; report: ReportRef };

/** Between applies, the stop waits this long for the apply in flight, then quiesces anyway. */
export const APPLY_GRACE_MS = 60_000;
/** An unenrolled daemon looks again for a genesis this often. */
export const ENROLMENT_RECHECK_MS = 5_000;
/** A report the mesh did not acknowledge is sent again after this long. */
export const REPORT_RETRY_MS = 1_000;

/** (epoch, sequence) order: a delivery without an epoch is ordered by its sequence alone. */
export function isOlder(a: Delivery, b: Delivery): boolean {
  if (a.epoch !== undefined && b.epoch !== undefined && a.epoch !== b.epoch) return a.epoch < b.epoch;
  return a.sequence < b.sequence;
}

/**
 * The host's life (docs/design.md, "The lifecycle"). Pure: every effect is an actor provided to it (`provide`), so the same
 * definition runs with real actors in the daemon and with controllable ones in the model-based tests.
 */
export const lifecycleMachine = setup({
  types: {
    context: {} as LifecycleContext,
    events: {} as LifecycleEvent,
    output: {} as { ending?: Ending; failure?: string; abandoned?: boolean },
  },
  actors: {
    /** Loads the store under the lock and removes leftover temporary saves. */
    loadStore: fromPromise<LoadedStore>(async () => {
      throw new Error('loadStore is provided by the host');
    }),
    /** Enrols from a genesis bundle through the one apply path. */
    genesis: fromPromise<WorkerOutput, { bundle: unknown }>(async () => {
      throw new Error('genesis is provided by the host');
    }),
    /** The link: watches declarations and sends DELIVERY, LINK_UP and LINK_DOWN. It carries no actions. */
    link: fromCallback(() => () => {}),
    /** Sends RECONCILE_TICK every interval. It only enqueues. */
    reconcileTimer: fromCallback(() => () => {}),
    /** Applies one pending declaration once and makes one report (or none, for a silent reconcile). */
    applyWorker: fromPromise<WorkerOutput, Pending>(async () => {
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
    enrolled: ({ event }) => (event as unknown as { output: LoadedStore }).output.enrolled,
    ending: ({ context }) => context.ending !== undefined,
    hasPending: ({ context }) => context.pending !== undefined,
    hasReports: ({ context }) => context.outbox.length > 0,
    isConverged: ({ context }) => context.mode === 'converged',
    modeConverged: ({ event }) => event.type === 'MODE_IS' && event.mode === 'converged',
    modeAdopted: ({ event }) => event.type === 'MODE_IS' && event.mode === 'adopted',
    standingAside: ({ context }) => context.ending === 'standAside',
    moving: ({ context }) => context.ending === 'move',
  },
  actions: {
    /** Newest wins: a delivery replaces a pending reconcile or an older delivery, never a newer one. */
    enqueueDelivery: assign({
      pending: ({ context, event }) => {
        if (event.type !== 'DELIVERY') return context.pending;
        const held = context.pending;
        if (held?.kind === 'delivery' && isOlder(event.delivery, held.delivery)) return held;
        return { kind: 'delivery' as const, delivery: event.delivery };
      },
    }),
    /** A tick never displaces a pending delivery: it asks for the kept declaration only when nothing waits. */
    enqueueReconcile: assign({ pending: ({ context }) => context.pending ?? { kind: 'reconcile' as const } }),
    takePending: assign({ inFlight: ({ context }) => context.pending, pending: () => undefined }),
    finishApply: assign({
      inFlight: () => undefined,
      outbox: ({ context, event }) => {
        const output = (event as unknown as { output?: WorkerOutput }).output;
        return output?.report ? [...context.outbox, output.report] : context.outbox;
      },
      mode: ({ context, event }) => (event as unknown as { output?: WorkerOutput }).output?.mode ?? context.mode,
    }),
    failApply: assign({ inFlight: () => undefined }),
    sayMode: raise(({ context }) => ({ type: 'MODE_IS' as const, mode: context.mode ?? 'adopted' })),
    sent: assign({ outbox: ({ context }) => context.outbox.slice(1) }),
    queueReport: assign({ outbox: ({ context, event }) => (event.type === 'REPORT_MADE' ? [...context.outbox, event.report] : context.outbox) }),
    requestStop: assign({ ending: () => 'stop' as const }),
    requestStandAside: assign({ ending: ({ context }) => context.ending ?? ('standAside' as const) }),
    requestMove: assign({ ending: ({ context }) => context.ending ?? ('move' as const) }),
    raiseEnd: raise({ type: 'END_REQUESTED' as const }),
    loaded: assign({
      mode: ({ event }) => (event as unknown as { output: LoadedStore }).output.mode,
      outbox: ({ event }) => (event as unknown as { output: LoadedStore }).output.outbox,
    }),
    failedToStart: assign({ failure: ({ event }) => String((event as unknown as { error: unknown }).error) }),
    clearEnding: assign({ ending: () => undefined }),
    abandonApply: assign({ ending: () => 'stop' as const, abandoned: () => true }),
  },
  delays: {
    applyGrace: APPLY_GRACE_MS,
    enrolmentRecheck: ENROLMENT_RECHECK_MS,
    reportRetry: REPORT_RETRY_MS,
  },
}).createMachine({
  id: 'host',
  context: { outbox: [] },
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
          { guard: 'ending', target: 'quiescing', actions: 'loaded' },
          { guard: 'enrolled', target: 'serving', actions: 'loaded' },
          { target: 'unenrolled', actions: 'loaded' },
        ],
        onError: { target: 'stopped', actions: 'failedToStart' },
      },
      on: { STOP: { actions: 'requestStop' } },
    },
    unenrolled: {
      after: { enrolmentRecheck: 'starting' },
      on: {
        GENESIS: 'genesis',
        STOP: { target: 'quiescing', actions: 'requestStop' },
      },
    },
    genesis: {
      invoke: {
        id: 'genesis',
        src: 'genesis',
        input: ({ event }) => ({ bundle: event.type === 'GENESIS' ? event.bundle : undefined }),
        onDone: [
          { guard: 'ending', target: 'quiescing', actions: 'finishApply' },
          { target: 'serving', actions: 'finishApply' },
        ],
        onError: [{ guard: 'ending', target: 'quiescing' }, { target: 'unenrolled' }],
      },
      on: { STOP: { actions: 'requestStop' } },
    },
    serving: {
      type: 'parallel',
      on: {
        STOP: { actions: ['requestStop', 'raiseEnd'] },
        STAND_ASIDE: { actions: ['requestStandAside', 'raiseEnd'] },
        MOVE: { actions: ['requestMove', 'raiseEnd'] },
        DELIVERY: { actions: 'enqueueDelivery' },
        RECONCILE_TICK: { actions: 'enqueueReconcile' },
        REPORT_MADE: { actions: 'queueReport' },
      },
      states: {
        mode: {
          initial: 'reading',
          states: {
            reading: { always: [{ guard: 'isConverged', target: 'converged' }, { target: 'adopted' }] },
            adopted: { on: { MODE_IS: { guard: 'modeConverged', target: 'converged' } } },
            converged: { on: { MODE_IS: { guard: 'modeAdopted', target: 'adopted' } } },
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
              always: [
                { guard: 'ending', target: '#host.quiescing' },
                { guard: 'hasPending', target: 'applying', actions: 'takePending' },
              ],
            },
            applying: {
              invoke: {
                id: 'applyWorker',
                src: 'applyWorker',
                input: ({ context }) => context.inFlight!,
                onDone: { target: 'idle', actions: ['finishApply', 'sayMode'] },
                onError: { target: 'idle', actions: 'failApply' },
              },
              initial: 'running',
              states: {
                running: { on: { END_REQUESTED: 'draining' } },
                // Ending between applies: the apply in flight is never cancelled; after the grace the
                // host quiesces anyway and the apply's own save is refused. It then stops, whatever
                // ending was asked: standing aside or moving on with an apply still running would let
                // the next apply overlap it. The service manager starts a fresh host.
                draining: { after: { applyGrace: { target: '#host.quiescing', actions: 'abandonApply' } } },
              },
            },
          },
        },
        outbox: {
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
