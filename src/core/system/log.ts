import { createRequire } from 'node:module';
import type { Level, LogFn, Logger as PinoLogger } from 'pino';

/** What the host logs through: pino's calls, `(obj, msg)` or `(msg)`, at these levels. */
export interface Logger {
  fatal: LogFn;
  error: LogFn;
  warn: LogFn;
  info: LogFn;
  debug: LogFn;
  trace: LogFn;
}

export const LOG_LEVELS: readonly Level[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];
const LEVEL_VALUES: Record<Level, number> = { fatal: 60, error: 50, warn: 40, info: 30, debug: 20, trace: 10 };

export interface LogOptions {
  level: string;
  /** Where log lines go: stdout for the journal, stderr when stdout carries a JSON document. */
  stream: 'stdout' | 'stderr';
  /** Readable lines instead of JSON (a terminal). */
  pretty: boolean;
  /** The program the lines are from (their `name`): mesh-host unless said. */
  name?: string;
}

/**
 * JSON lines for the journal, readable lines on a terminal; written synchronously so nothing is lost
 * at exit. pino itself is evaluated at the first line the level lets through: a quiet command (an
 * apply at --log-level warn that has nothing to warn of) never pays for it, nor for the worker and
 * stream modules it brings. The readable formatter is loaded only for a terminal.
 */
export async function createLogger(options: LogOptions): Promise<Logger> {
  const fd = options.stream === 'stdout' ? 1 : 2;
  const pretty = options.pretty
    ? (await import('pino-pretty')).default({ destination: fd, sync: true, colorize: true, ignore: 'pid,hostname', translateTime: 'HH:MM:ss.l' })
    : undefined;
  let real: PinoLogger | undefined;
  const open = (): PinoLogger => {
    if (real) return real;
    const { pino } = loadPino();
    real = pino({ level: options.level, base: { name: options.name ?? 'mesh-host' } }, pretty ?? pino.destination({ dest: fd, sync: true }));
    return real;
  };
  const threshold = LEVEL_VALUES[options.level as Level] ?? Number.POSITIVE_INFINITY;
  const at = (level: Level): LogFn =>
    LEVEL_VALUES[level] < threshold ? () => {} : ((...args: Parameters<LogFn>) => open()[level](...args)) as LogFn;
  return { fatal: at('fatal'), error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug'), trace: at('trace') };
}

/**
 * pino, evaluated now. In the bundle this `require` is esbuild's own, which evaluates the bundled
 * pino at this call and not when the bundle loads; unbundled (tests, dist/src) Node's is asked.
 */
function loadPino(): typeof import('pino') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return typeof require === 'function' ? (require('pino') as typeof import('pino')) : (createRequire(import.meta.url)('pino') as typeof import('pino'));
}

/** A logger that drops everything, for tests that do not look at logs. */
export function silentLogger(): Logger {
  const none = (() => {}) as LogFn;
  return { fatal: none, error: none, warn: none, info: none, debug: none, trace: none };
}
