import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Logger } from '../../core/system/log.js';
import { LAUNCHER_FD_ENV, TRIAL_ENV, pipeEnd, type HostEvent, type LauncherCommand } from './pipe.js';

export interface HostExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** One `mesh-host run` the launcher started, with the pipe it handed down. */
export interface HostProcess {
  release: string;
  pid: number;
  /** Resolves when the process has ended. */
  exited: Promise<HostExit>;
  /** Set once it has ended. */
  exit?: HostExit;
  send(command: LauncherCommand): void;
  signal(signal: NodeJS.Signals): void;
  /** Called with every event it reports. */
  onEvent(handler: (event: HostEvent) => void): () => void;
}

export interface StartHost {
  (release: string, executable: string, options: { trial: boolean }): HostProcess;
}

export const describeExit = (exit: HostExit) => (exit.signal ? `it was ended by ${exit.signal}` : `it exited with status ${exit.code}`);

/** Starts hosts as real processes: `EXECUTABLE run ARGS`, the pipe on descriptor 3. */
export function processStarter(args: string[], log: Logger, env: NodeJS.ProcessEnv = process.env): StartHost {
  return (release, executable, options) => {
    const childEnv: NodeJS.ProcessEnv = { ...env, [LAUNCHER_FD_ENV]: '3' };
    delete childEnv[TRIAL_ENV];
    if (options.trial) childEnv[TRIAL_ENV] = release;
    const child = spawn(executable, ['run', ...args], { stdio: ['ignore', 'inherit', 'inherit', 'pipe'], env: childEnv });
    const handlers = new Set<(event: HostEvent) => void>();
    const exited = new Promise<HostExit>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      // A process that could not be started at all ends as a 127 (what a shell says).
      child.once('error', (err) => {
        log.error({ err, executable }, 'the host could not be started');
        resolve({ code: 127, signal: null });
      });
    });
    const host: HostProcess = {
      release,
      pid: child.pid ?? -1,
      exited,
      send: () => {},
      signal: (signal) => {
        if (host.exit === undefined) child.kill(signal);
      },
      onEvent: (handler) => {
        handlers.add(handler);
        return () => handlers.delete(handler);
      },
    };
    void exited.then((exit) => (host.exit = exit));
    const socket = child.stdio[3] as Socket | null | undefined;
    if (socket) {
      const pipe = pipeEnd<LauncherCommand, HostEvent>(socket, log, 'launcher');
      pipe.onMessage((event) => {
        for (const handler of handlers) handler(event);
      });
      host.send = (command) => pipe.send(command);
      void exited.then(() => pipe.close());
    }
    return host;
  };
}

export type Waited<T> = { kind: 'event'; value: T } | { kind: 'exited'; exit: HostExit } | { kind: 'timeout' };

/** Waits until the host reports an event `pick` takes, ends, or the time is up. */
export function waitForHost<T>(host: HostProcess, pick: (event: HostEvent) => T | undefined, timeoutMs: number): Promise<Waited<T>> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (result: Waited<T>) => {
      if (settled) return;
      settled = true;
      off();
      clearTimeout(timer);
      resolve(result);
    };
    const timer = setTimeout(() => done({ kind: 'timeout' }), timeoutMs);
    const off = host.onEvent((event) => {
      const value = pick(event);
      if (value !== undefined) done({ kind: 'event', value });
    });
    void host.exited.then((exit) => done({ kind: 'exited', exit }));
  });
}

/** Asks a host to end (SIGTERM: between applies) and kills it after the grace. */
export async function stopHost(host: HostProcess, graceMs: number, log: Logger): Promise<HostExit> {
  if (host.exit) return host.exit;
  host.signal('SIGTERM');
  const timer = setTimeout(() => {
    log.error({ release: host.release, pid: host.pid, graceMs }, `the host of release ${host.release} did not end within ${graceMs / 1000} s of SIGTERM: killed`);
    host.signal('SIGKILL');
  }, graceMs);
  const exit = await host.exited;
  clearTimeout(timer);
  return exit;
}
