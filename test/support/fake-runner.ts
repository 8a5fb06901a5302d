import type { CommandRunner, RunOptions, RunResult } from '../../src/core/system/runner.js';

export type Answer = RunResult | 'hang' | ((args: readonly string[]) => RunResult | 'hang');

export const said = (stdout: string, code = 0, stderr = ''): RunResult => ({ code, stdout, stderr });
export const missing = (command: string): RunResult => ({
  code: null,
  stdout: '',
  stderr: '',
  failure: { kind: 'missing', message: `${command} is not installed (not found on PATH)` },
});

/** Answers as the real tools do, keyed by command name; anything unanswered is a missing binary. */
export function fakeRunner(answers: Record<string, Answer>): CommandRunner & { calls: Array<{ command: string; args: readonly string[] }> } {
  const calls: Array<{ command: string; args: readonly string[] }> = [];
  return {
    calls,
    run(command: string, args: readonly string[], _options?: RunOptions): Promise<RunResult> {
      calls.push({ command, args });
      const answer = answers[command];
      const result = typeof answer === 'function' ? answer(args) : answer ?? missing(command);
      if (result === 'hang') return new Promise(() => {});
      return Promise.resolve(result);
    },
  };
}
