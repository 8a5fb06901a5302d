import { Socket } from 'node:net';
import { createInterface } from 'node:readline';
import type { Logger } from '../../core/system/log.js';

/**
 * The pipe between `mesh-host launch` and the host it runs: a socket the launcher made and handed down
 * as an inherited descriptor, one JSON line a message each way. It is the only way a host on trial
 * says how far it got: nothing another process could write (a file, a socket with a name) is believed.
 */

/** The descriptor number of the pipe, in the host's environment. */
export const LAUNCHER_FD_ENV = 'MESH_HOST_LAUNCHER_FD';
/** Set for a host on trial: the release it is. Its first apply is made at once and always reported. */
export const TRIAL_ENV = 'MESH_HOST_TRIAL';

/** What a host tells its launcher. */
export type HostEvent =
  /** The store is loaded and the host serves (after a start or a resume). */
  | { type: 'serving' }
  | { type: 'link-up' }
  /** An apply ended; `report` is the report it made, `outcome` how it ended. */
  | { type: 'applied'; outcome: 'converged' | 'failed' | 'refused'; report?: number; error?: string }
  /** The mesh acknowledged every report of this host up to this one. */
  | { type: 'acked'; report: number }
  /** The store is quiesced: the host ends (stop) or stands aside, between applies. */
  | { type: 'quiesced'; ending: string };

/** A trial that did not pass, as the resumed host reports it. */
export interface FailedTrial {
  release: string;
  reason: string;
  /** The release that runs again. */
  running: string;
}

/** What a launcher tells its host. */
export type LauncherCommand =
  | { type: 'stand-aside' }
  | { type: 'resume'; failedTrial?: FailedTrial }
  /** A failed trial to report while serving (a release that could not even be started). */
  | { type: 'trial-failed'; failedTrial: FailedTrial }
  | { type: 'stop' };

/** One end of the pipe: sends one kind of message, receives the other. */
export interface PipeEnd<Out, In> {
  send(message: Out): void;
  onMessage(handler: (message: In) => void): void;
  /** Called once when the other end is gone (it ended, or closed the pipe). */
  onClose(handler: () => void): void;
  close(): void;
}

/** Wraps a connected socket; a line that is not JSON of an object is logged and dropped. */
export function pipeEnd<Out, In>(socket: Socket, log: Logger, side: string): PipeEnd<Out, In> {
  const handlers: ((message: In) => void)[] = [];
  const lines = createInterface({ input: socket });
  lines.on('line', (line) => {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      log.warn({ side }, 'the launcher pipe carried a line that is not JSON; dropped');
      return;
    }
    if (typeof message !== 'object' || message === null || typeof (message as { type?: unknown }).type !== 'string') return;
    for (const handler of handlers) handler(message as In);
  });
  socket.on('error', (err) => log.debug({ err, side }, 'the launcher pipe failed'));
  const closers: (() => void)[] = [];
  let closing = false;
  socket.once('close', () => {
    if (!closing) for (const closer of closers) closer();
  });
  return {
    send(message) {
      if (!socket.destroyed && socket.writable) socket.write(`${JSON.stringify(message)}\n`);
    },
    onMessage(handler) {
      handlers.push(handler);
    },
    onClose(handler) {
      closers.push(handler);
    },
    close() {
      closing = true;
      lines.close();
      socket.destroy();
    },
  };
}

/** The host's end, when a launcher started it; it never keeps the host alive by itself. */
export function launcherPipeOf(env: NodeJS.ProcessEnv, log: Logger): PipeEnd<HostEvent, LauncherCommand> | undefined {
  const fd = Number(env[LAUNCHER_FD_ENV]);
  if (!Number.isInteger(fd) || fd < 3) return undefined;
  let socket: Socket;
  try {
    socket = new Socket({ fd, readable: true, writable: true });
  } catch (err) {
    log.warn({ err, fd }, 'the launcher pipe cannot be opened; the host runs without its launcher');
    return undefined;
  }
  socket.unref();
  return pipeEnd(socket, log, 'host');
}
