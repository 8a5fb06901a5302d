import { assign, setup } from 'xstate';

/** What a look saw: only the facts the verdict is decided on. */
export interface Look {
  activeState: string;
  subState: string;
  result: string;
  invocationId: string;
  nRestarts: number;
  /** A job is queued or running on the unit (the action's own: a start not yet begun, a restart still stopping). */
  job: boolean;
  /** Milliseconds since the action. */
  sinceActionMs: number;
}

export type WatchVerdict = { accepted: true; unit: string } | { accepted: false; unit: string; message: string };

export interface WatcherInput {
  unit: string;
  action: 'start' | 'restart' | 'reload';
}

type WatcherEvent = { type: 'FIRST_LOOK'; look: Look } | { type: 'SECOND_LOOK'; look: Look };

const running = (l: Look) => l.activeState === 'active' || l.activeState === 'reloading';
/**
 * On its way up: activating, or not up yet with a job queued. A restart asked with --no-block is first a
 * stop: a look while that stop still runs sees the unit deactivating (or already inactive or failed) with
 * the restart's job queued, and that is the action under way, not a death. On a loaded machine the look
 * right after the action came 156 ms later and still found `sleep` being sent SIGTERM.
 */
const starting = (l: Look) => l.activeState === 'activating' || (l.job && (l.activeState === 'inactive' || l.activeState === 'deactivating' || l.activeState === 'failed'));
/**
 * The action's own run has begun: up, or coming up. Not a unit still up with a restart's job queued: that
 * is the run before, which the restart has yet to stop (on a loaded machine, or while the job waits its
 * turn behind another unit's, the look can come before the stop begins), so its invocation is meant to end.
 */
const begun = (l: Look, action: WatcherInput['action']) => (running(l) && !(action === 'restart' && l.job)) || l.activeState === 'activating';
const state = (l: Look) => `ActiveState=${l.activeState}, SubState=${l.subState}, Result=${l.result}`;

/**
 * The two looks at one unit the apply started, restarted or reloaded (docs/design.md, "Services are read twice"). It decides; the
 * apply reads the unit and sends what it saw. Pure: no I/O, no timers (the pause is the apply's,
 * shared by every unit).
 */
export const unitWatcherMachine = setup({
  types: {
    input: {} as WatcherInput,
    context: {} as WatcherInput & { first?: Look; verdict?: WatchVerdict },
    events: {} as WatcherEvent,
    output: {} as WatchVerdict,
  },
  guards: {
    /** Neither running nor starting right after the action: dead at once. */
    deadAtFirstLook: ({ event }) => event.type === 'FIRST_LOOK' && !running(event.look) && !starting(event.look),
    /**
     * The manager restarted it between the looks, or its invocation changed: it died in between. The
     * invocation counts only when the first look saw the action's own run begun (running or activating): a first look before that (a
     * restart not yet stopping or still stopping, a start still queued) saw the run before, whose
     * invocation is meant to end. A restart the host asked for is never counted as one between the looks.
     */
    restartedBetweenLooks: ({ context, event }) =>
      event.type === 'SECOND_LOOK' &&
      context.first !== undefined &&
      // The manager's own restarts are counted whatever the first look saw: the host's restart never adds to them.
      (event.look.nRestarts > context.first.nRestarts ||
        (begun(context.first, context.action) && context.first.invocationId !== '' && event.look.invocationId !== context.first.invocationId)),
    /** Not running and not starting at the second look. */
    deadAtSecondLook: ({ event }) => event.type === 'SECOND_LOOK' && !running(event.look) && !starting(event.look),
  },
}).createMachine({
  id: 'unitWatcher',
  context: ({ input }) => ({ ...input }),
  initial: 'awaitingFirstLook',
  states: {
    awaitingFirstLook: {
      on: {
        FIRST_LOOK: [
          {
            guard: 'deadAtFirstLook',
            target: 'failed',
            actions: assign({
              verdict: ({ context, event }) => ({
                accepted: false as const,
                unit: context.unit,
                message: `${context.unit} is not running right after ${context.action} (${state(event.look)}, seen ${Math.round(event.look.sinceActionMs)} ms after the action)`,
              }),
            }),
          },
          { target: 'awaitingSecondLook', actions: assign({ first: ({ event }) => event.look }) },
        ],
      },
    },
    awaitingSecondLook: {
      on: {
        SECOND_LOOK: [
          {
            guard: 'restartedBetweenLooks',
            target: 'failed',
            actions: assign({
              verdict: ({ context, event }) => ({
                accepted: false as const,
                unit: context.unit,
                message: `${context.unit} was restarted by the service manager ${Math.max(1, event.look.nRestarts - (context.first?.nRestarts ?? 0))} times between the looks (${state(event.look)}, seen ${Math.round(event.look.sinceActionMs)} ms after the ${context.action})`,
              }),
            }),
          },
          {
            guard: 'deadAtSecondLook',
            target: 'failed',
            actions: assign({
              verdict: ({ context, event }) => ({
                accepted: false as const,
                unit: context.unit,
                message: `${context.unit} was ${context.first && running(context.first) ? 'running' : 'starting'} at the first look and is not at the second (${state(event.look)}, seen ${Math.round(event.look.sinceActionMs)} ms after the ${context.action})`,
              }),
            }),
          },
          // Running, or still starting: accepted. This is never a wait for a unit to come up.
          { target: 'accepted', actions: assign({ verdict: ({ context }) => ({ accepted: true as const, unit: context.unit }) }) },
        ],
      },
    },
    accepted: { type: 'final' },
    failed: { type: 'final' },
  },
  output: ({ context }) => context.verdict!,
});
