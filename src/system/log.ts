import { pino, type Logger, type Level } from 'pino';

export type { Logger };

export const LOG_LEVELS: readonly Level[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

export interface LogOptions {
  level: string;
  /** Where log lines go: stdout for the journal, stderr when stdout carries a JSON document. */
  stream: 'stdout' | 'stderr';
  /** Readable lines instead of JSON (a terminal). */
  pretty: boolean;
}

/**
 * JSON lines for the journal, readable lines on a terminal; written synchronously so nothing is lost
 * at exit. The readable formatter is loaded only for a terminal.
 */
export async function createLogger(options: LogOptions): Promise<Logger> {
  const fd = options.stream === 'stdout' ? 1 : 2;
  const destination = options.pretty
    ? (await import('pino-pretty')).default({ destination: fd, sync: true, colorize: true, ignore: 'pid,hostname', translateTime: 'HH:MM:ss.l' })
    : pino.destination({ dest: fd, sync: true });
  return pino({ level: options.level, base: { name: 'mesh-host' } }, destination);
}

/** A logger that drops everything, for tests that do not look at logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
