
/** What a finished (or failed-to-run) command said. */
export interface RunResult {
  /** Exit code, or null when the command was killed or never ran. */
  code: number | null;
  stdout: string;
  stderr: string;
  /** Set when the command did not run to its own end. */
  failure?: { kind: 'missing' | 'timeout' | 'spawn'; message: string };
}

export interface RunOptions {
  /** Cut the command off after this many milliseconds and say so. */
  timeoutMs?: number;
  input?: string;
  env?: NodeJS.ProcessEnv;
}

/** Every command the host runs goes through one of these, so tests can answer as the real tools do. */
export interface CommandRunner {
  run(command: string, args: readonly string[], options?: RunOptions): Promise<RunResult>;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** Runs real processes. Never throws: a missing binary or a hang is a result, not an exception. */
export function systemRunner(): CommandRunner {
  // Loaded at the first command: most applies run none, and child_process brings net and dgram along.
  let childProcess: Promise<typeof import('node:child_process')> | undefined;
  return {
    async run(command, args, options = {}) {
      const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      const { spawn } = await (childProcess ??= import('node:child_process'));
      return new Promise<RunResult>((resolve) => {
        let stdout = '';
        let stderr = '';
        let settled = false;
        const child = spawn(command, args, {
          stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
          env: options.env ?? { ...process.env, LC_ALL: 'C' },
        });
        const finish = (result: RunResult) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve(result);
        };
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          finish({
            code: null,
            stdout,
            stderr,
            failure: { kind: 'timeout', message: `${command} did not answer within ${timeoutMs} ms and was cut off` },
          });
        }, timeoutMs);
        child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
        child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        child.on('error', (err: NodeJS.ErrnoException) => {
          finish({
            code: null,
            stdout,
            stderr,
            failure:
              err.code === 'ENOENT'
                ? { kind: 'missing', message: `${command} is not installed (not found on PATH)` }
                : { kind: 'spawn', message: `${command} could not be started: ${err.message}` },
          });
        });
        child.on('close', (code) => finish({ code, stdout, stderr }));
        if (options.input !== undefined) child.stdin?.end(options.input);
      });
    },
  };
}
