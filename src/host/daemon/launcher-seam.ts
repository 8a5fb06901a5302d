import type { LifecycleActor, Work } from '../../../machines/lifecycle.js';
import type { HostEnv } from '../../engine/apply/apply.js';
import type { FailedTrial, HostEvent, LauncherCommand, PipeEnd } from '../release/pipe.js';
import { reportFailedTrial } from '../release/trial-report.js';
import type { Logger } from '../../core/system/log.js';
import type { SavedHead } from '../../core/store/peek.js';

/** What the daemon is given when `mesh-host launch` started it. */
export interface LauncherLink {
  /** The pipe the launcher handed down: what the host reached goes up it, the launcher's commands come down. */
  pipe: PipeEnd<HostEvent, LauncherCommand>;
  /** The release this host is, when it runs on trial: its first apply is asked for as soon as it serves, and reported. */
  trial?: string;
}

export interface LauncherSeamDeps extends LauncherLink {
  /** The store's head as saved (the daemon's peek). */
  head: () => SavedHead | undefined;
  node: () => string;
  log: Logger;
  /** Makes a report under the host's lock, as the worker does; the outbox watch hands it to the machine. */
  report(make: (env: HostEnv) => void): Promise<void>;
}

type Snapshot = ReturnType<LifecycleActor['getSnapshot']>;

/**
 * The daemon's side of the launcher: it only watches the lifecycle and speaks for it (serving, the
 * link up, an apply ended, reports acknowledged, the store quiesced), and turns the launcher's commands
 * into the lifecycle's own events (stand aside, resume, stop). A resumed host reports the trial that
 * failed once it serves again, under the lock, in the one report sequence. Returns the detach.
 */
export function attachLauncher(actor: LifecycleActor, deps: LauncherSeamDeps): () => void {
  const { pipe, log } = deps;
  let serving = false;
  let linkUp = false;
  /** The work the worker has in hand: its end is told by the work changing, since one may follow another at once. */
  let working: Work | undefined;
  let ackedThrough = 0;
  let aside = false;
  let ended = false;
  let trialDue = deps.trial !== undefined;
  /** Said once this host serves again (after a resume, or now if it serves). */
  let failedTrials: FailedTrial[] = [];
  /** The last outcome seen in the saved store: an apply that ended says the next one. */
  let lastOutcomeAt: string | undefined = outcomeOf()?.at;

  function outcomeOf() {
    return (deps.head()?.lastOutcome ?? null) as { outcome: 'converged' | 'failed' | 'refused'; at: string; reportSequence?: number; message?: string } | null;
  }

  function reportFailed(): void {
    const trials = failedTrials;
    failedTrials = [];
    for (const trial of trials) {
      deps.report((env) => void reportFailedTrial(env, trial)).catch((err: Error) => log.error({ err, release: trial.release }, 'the failed trial could not be reported'));
    }
  }

  function observe(snapshot: Snapshot): void {
    const nowServing = snapshot.matches('serving');
    if (nowServing && !serving) {
      pipe.send({ type: 'serving' });
      ackedThrough = 0;
      reportFailed();
      if (trialDue) {
        trialDue = false;
        // A watcher's finding asks for a reconcile that always reports: the trial's proof of an apply.
        actor.send({ type: 'DRIFT_FOUND', found: [`release ${deps.trial} on trial: its first apply, made at once and reported`] });
      }
    }
    serving = nowServing;
    const nowUp = nowServing && snapshot.matches({ serving: { link: 'up' } });
    if (nowUp && !linkUp) pipe.send({ type: 'link-up' });
    linkUp = nowUp;
    const work = nowServing && snapshot.matches({ serving: { worker: 'applying' } }) ? snapshot.context.inFlight : undefined;
    if (working !== undefined && work !== working) workEnded(working);
    working = work;
    if (snapshot.context.sentThrough > ackedThrough) {
      ackedThrough = snapshot.context.sentThrough;
      pipe.send({ type: 'acked', report: ackedThrough });
    }
    const nowAside = snapshot.matches('standingAside');
    if (nowAside && !aside) pipe.send({ type: 'quiesced', ending: 'standAside' });
    aside = nowAside;
    if (snapshot.status === 'done' && !ended) {
      ended = true;
      pipe.send({ type: 'quiesced', ending: snapshot.context.ending ?? 'stop' });
    }
  }

  /**
   * The worker's work ended. An apply's outcome and report are said as the store saved them (an apply
   * that could not run saved none). Refusals the worker reported are not an apply of this release: a
   * stale or forged value of the key, refused, neither passes nor fails a trial, and is not said later.
   */
  function workEnded(ended: Work): void {
    const outcome = outcomeOf();
    if (!outcome || outcome.at === lastOutcomeAt) return;
    lastOutcomeAt = outcome.at;
    if (ended.kind === 'refusals') return;
    pipe.send({ type: 'applied', outcome: outcome.outcome, ...(outcome.reportSequence ? { report: outcome.reportSequence } : {}), ...(outcome.message ? { error: outcome.message } : {}) });
  }

  obeyLauncher(actor, deps, (trial) => {
    failedTrials.push(trial);
    return serving ? reportFailed() : undefined;
  });
  const subscription = actor.subscribe(observe);
  return () => subscription.unsubscribe();
}

/**
 * The launcher's commands, as the lifecycle's own events. A failed trial is handed to `failed`: said
 * once the host serves (a resume's), or at once while it serves (a release that could not even start).
 */
function obeyLauncher(actor: LifecycleActor, deps: LauncherSeamDeps, failed: (trial: FailedTrial) => void): void {
  deps.pipe.onMessage((command) => {
    if (command.type === 'stand-aside') actor.send({ type: 'STAND_ASIDE' });
    else if (command.type === 'stop') actor.send({ type: 'STOP' });
    else if (command.type === 'resume') {
      if (command.failedTrial) failed(command.failedTrial);
      actor.send({ type: 'RESUME' });
    } else if (command.type === 'trial-failed') failed(command.failedTrial);
  });
  // A launcher that is gone (killed) can neither judge a trial nor stop this host: it ends, between applies.
  deps.pipe.onClose(() => {
    deps.log.warn('the launcher is gone: the host ends between applies');
    actor.send({ type: 'STOP' });
  });
}
