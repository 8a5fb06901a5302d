import type { Logger } from '../../core/system/log.js';
import type { CommandRunner } from '../../core/system/runner.js';
import { describeExit, stopHost, waitForHost, type HostExit, type HostProcess, type StartHost } from './host-process.js';
import { executableOf, moveCurrent, readCurrent, readDeclaredRelease, readFailedTrial, releaseProblem, writeFailedTrial, type ReleaseLayout } from './layout.js';
import type { FailedTrial, HostEvent } from './pipe.js';
import type { ReleaseKeys } from './verify-release.js';

/** A host on trial is given this long to end after SIGTERM before it is killed. */
export const TRIAL_STOP_GRACE_MS = 75_000;
/** The serving host, asked to end, waits up to 60 s for its apply in flight; this is past that. */
export const HOST_STOP_GRACE_MS = 110_000;
/** Standing aside also waits up to 60 s for the apply in flight. */
export const STAND_ASIDE_TIMEOUT_MS = 90_000;
/**
 * How long a host on trial has to load the store, connect, apply and have its report acknowledged.
 * Three minutes: an apply that restarts services (a 1.5 s second look) and fetches an archive over a
 * slow link fits well inside, and a machine is not left on a host that does not work for longer.
 */
export const DEFAULT_TRIAL_TIMEOUT_MS = 180_000;
/** What the launcher exits with when its host ended without being asked to: the unit starts it again. */
export const EXIT_HOST_ENDED = 75;

export interface LaunchOptions {
  layout: ReleaseLayout;
  stateDir: string;
  log: Logger;
  runner: CommandRunner;
  startHost: StartHost;
  trialTimeoutMs?: number;
  trialStopGraceMs?: number;
  /** Why a release cannot be tried (default: not unpacked, not an executable for this machine, not signed by the release keys, not that release). */
  checkRelease?: (version: string) => Promise<string | undefined>;
  /** The release keys of the trust root held now (read at each release considered: a rotation may have changed them). */
  releaseKeys?: () => ReleaseKeys | undefined;
}

type TrialVerdict = { kind: 'passed' } | { kind: 'failed'; reason: string } | { kind: 'stopped' };

/**
 * `mesh-host launch`: runs the current release's host and, when an apply leaves the declared release
 * different from the one running, tries it: the running host stands aside (between applies, the lock
 * and the link let go), the new one runs on trial and reports back over its pipe; it passes when it has
 * served, connected, applied and had a report acknowledged within the bound. Then `current` moves and
 * the old host ends; otherwise the new one is stopped (75 s grace) and the old one resumes and reports
 * why. A release that failed is not tried again until the mesh names another.
 */
export class Launcher {
  private host: HostProcess | undefined;
  private trying = false;
  private trialInProgress: Promise<void> | undefined;
  private stopRequested = false;
  private stopWaiters: (() => void)[] = [];
  private readonly trialTimeoutMs: number;
  private readonly trialStopGraceMs: number;

  constructor(private readonly options: LaunchOptions) {
    this.trialTimeoutMs = options.trialTimeoutMs ?? DEFAULT_TRIAL_TIMEOUT_MS;
    this.trialStopGraceMs = options.trialStopGraceMs ?? TRIAL_STOP_GRACE_MS;
  }

  /** Runs until stopped (0) or until the host ends by itself (its status, or 75 to be started again). */
  async run(): Promise<number> {
    const { log, layout } = this.options;
    const current = readCurrent(layout);
    if (!current.ok) {
      log.fatal({ problem: current.problem }, `mesh-host launch: nothing to run: ${current.problem}`);
      return 4;
    }
    this.start(current.value, false);
    for (;;) {
      const host = this.host!;
      await Promise.race([host.exited, this.stopped()]);
      // A trial decides itself which host serves after it, and ends both when the service stops.
      await this.trialInProgress;
      if (this.stopRequested) {
        await this.stopAll();
        log.info('mesh-host launch: stopped');
        return 0;
      }
      if (host.exit && this.host === host) return this.hostEnded(host, host.exit);
    }
  }

  /** A stop of the service (SIGTERM): every host ends between applies; the launcher then exits 0. */
  stop(): void {
    this.stopRequested = true;
    for (const wake of this.stopWaiters.splice(0)) wake();
  }

  /** SIGHUP: the serving host moves to the bus its configuration names. */
  reload(): void {
    this.host?.signal('SIGHUP');
  }

  private stopped(): Promise<void> {
    return this.stopRequested ? Promise.resolve() : new Promise((resolve) => this.stopWaiters.push(resolve));
  }

  private hostEnded(host: HostProcess, exit: HostExit): number {
    const code = exit.code === 2 || exit.code === 4 ? exit.code : EXIT_HOST_ENDED;
    this.options.log.error({ release: host.release, ...exit }, `the host of release ${host.release} ended by itself (${describeExit(exit)}); the launcher exits ${code}${code === EXIT_HOST_ENDED ? ' to be started again' : ': it needs an operator'}`);
    return code;
  }

  private start(release: string, trial: boolean, resumeWith?: FailedTrial): HostProcess {
    const host = this.options.startHost(release, executableOf(this.options.layout, release), { trial });
    this.options.log.info({ release, pid: host.pid, trial }, trial ? `release ${release} started on trial` : `release ${release} started`);
    if (!trial) {
      this.host = host;
      host.onEvent((event) => this.onServingEvent(host, event));
      if (resumeWith) {
        void waitForHost(host, (e) => (e.type === 'serving' ? true : undefined), this.trialTimeoutMs).then((w) => {
          if (w.kind === 'event') host.send({ type: 'trial-failed', failedTrial: resumeWith });
        });
      }
    }
    return host;
  }

  private onServingEvent(host: HostProcess, event: HostEvent): void {
    if (host !== this.host || this.trying || this.stopRequested) return;
    if (event.type !== 'serving' && event.type !== 'applied') return;
    this.trying = true;
    this.trialInProgress = this.considerRelease(host)
      .catch((err: Error) => this.options.log.error({ err }, 'the declared release could not be considered'))
      .finally(() => {
        this.trying = false;
        this.trialInProgress = undefined;
      });
  }

  /** After an apply: is another release named, one that may be tried? */
  private async considerRelease(host: HostProcess): Promise<void> {
    const { log, layout, stateDir, runner } = this.options;
    const declared = readDeclaredRelease(layout);
    if (!declared.ok) {
      log.warn({ problem: declared.problem }, `the declared release cannot be read: ${declared.problem}; release ${host.release} runs on`);
      return;
    }
    const wanted = declared.value;
    if (wanted === undefined || wanted === host.release) return;
    const failed = readFailedTrial(stateDir);
    if (failed === wanted) return;
    if (failed !== undefined) writeFailedTrial(stateDir, undefined);
    const problem = await (this.options.checkRelease ?? ((version: string) => releaseProblem(layout, version, runner, this.options.releaseKeys?.())))(wanted);
    if (problem) {
      log.error({ release: wanted, problem }, `release ${wanted} cannot be tried: ${problem}; release ${host.release} runs on`);
      writeFailedTrial(stateDir, wanted, problem);
      host.send({ type: 'trial-failed', failedTrial: { release: wanted, reason: problem, running: host.release } });
      return;
    }
    if (this.stopRequested || host !== this.host || host.exit) return;
    await this.trial(host, wanted);
  }

  private async trial(old: HostProcess, release: string): Promise<void> {
    const { log, layout, stateDir } = this.options;
    log.info({ from: old.release, to: release }, `the mesh names release ${release}: release ${old.release} stands aside and ${release} is tried`);
    old.send({ type: 'stand-aside' });
    const aside = await Promise.race([waitForHost(old, (e) => (e.type === 'quiesced' ? e.ending : undefined), STAND_ASIDE_TIMEOUT_MS), this.stopped().then(() => ({ kind: 'stop' as const }))]);
    if (aside.kind === 'stop') return;
    const oldAlive = aside.kind === 'event' && aside.value === 'standAside';
    if (!oldAlive) log.warn({ release: old.release, waited: aside.kind }, `release ${old.release} did not stand aside (${aside.kind === 'exited' ? describeExit(aside.exit) : aside.kind === 'event' ? `it ended: ${aside.value}` : 'no answer'}); ${release} is tried all the same`);
    if (!oldAlive && aside.kind === 'timeout') await stopHost(old, this.trialStopGraceMs, log);

    const candidate = this.start(release, true);
    const verdict = await this.judge(candidate);
    if (verdict.kind === 'stopped') {
      this.host = candidate;
      // Both end between applies: the old one stands aside already and ends at once.
      await Promise.all([stopHost(candidate, this.trialStopGraceMs, log), stopHost(old, HOST_STOP_GRACE_MS, log)]);
      return;
    }
    if (verdict.kind === 'passed') {
      moveCurrent(layout, release);
      writeFailedTrial(stateDir, undefined);
      this.host = candidate;
      candidate.onEvent((event) => this.onServingEvent(candidate, event));
      log.info({ release, previous: old.release }, `release ${release} passed its trial and is current; release ${old.release} ends`);
      await stopHost(old, HOST_STOP_GRACE_MS, log);
      return;
    }
    log.error({ release, reason: verdict.reason }, `release ${release} failed its trial: ${verdict.reason}; it is stopped and release ${old.release} resumes`);
    writeFailedTrial(stateDir, release, verdict.reason);
    await stopHost(candidate, this.trialStopGraceMs, log);
    const failedTrial: FailedTrial = { release, reason: verdict.reason, running: old.release };
    if (old.exit === undefined) {
      old.send({ type: 'resume', failedTrial });
      this.host = old;
    } else {
      this.start(old.release, false, failedTrial);
    }
  }

  /** Watches a host on trial until it passes, fails, or the service is stopped. */
  private judge(candidate: HostProcess): Promise<TrialVerdict> {
    return new Promise((resolve) => {
      const reached = { serving: false, connected: false, applied: undefined as number | undefined, acked: false };
      const progress = () => `it had ${reached.serving ? '' : 'not '}served, ${reached.connected ? '' : 'not '}connected, ${reached.applied !== undefined ? '' : 'not '}applied, ${reached.acked ? '' : 'not '}had its report acknowledged`;
      let settled = false;
      const done = (verdict: TrialVerdict) => {
        if (settled) return;
        settled = true;
        off();
        clearTimeout(timer);
        resolve(verdict);
      };
      let ackedThrough = 0;
      const off = candidate.onEvent((event) => {
        if (event.type === 'serving') reached.serving = true;
        else if (event.type === 'link-up') reached.connected = true;
        else if (event.type === 'applied') {
          if (event.outcome !== 'converged') return done({ kind: 'failed', reason: `its apply ended ${event.outcome}${event.error ? `: ${event.error}` : ''}` });
          if (event.report !== undefined) reached.applied = event.report;
        } else if (event.type === 'acked') ackedThrough = Math.max(ackedThrough, event.report);
        if (reached.applied !== undefined && ackedThrough >= reached.applied) reached.acked = true;
        if (reached.serving && reached.connected && reached.acked) done({ kind: 'passed' });
      });
      const timer = setTimeout(() => done({ kind: 'failed', reason: `it did not pass within ${Math.round(this.trialTimeoutMs / 1000)} s: ${progress()}` }), this.trialTimeoutMs);
      void candidate.exited.then((exit) => done({ kind: 'failed', reason: `${describeExit(exit)} before it passed (${progress()})` }));
      void this.stopped().then(() => done({ kind: 'stopped' }));
    });
  }

  private async stopAll(): Promise<void> {
    if (this.host) await stopHost(this.host, HOST_STOP_GRACE_MS, this.options.log);
  }
}
