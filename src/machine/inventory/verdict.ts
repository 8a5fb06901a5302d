import type { RunResult } from '../../core/system/runner.js';

/** One finding about the machine: reached by asking the thing to function, with the reason and the method. */
export interface Verdict {
  name: string;
  present: boolean;
  /** What it said about itself when present (a version, a state). */
  detail: string;
  /** Why it is judged present or absent, in words an operator can act on. */
  reason: string;
  /** The command that was asked. */
  method: string;
}

export interface Probe {
  name: string;
  command: string;
  args: string[];
  /** Reads what the tool said (not only how it exited) into a verdict. */
  read(result: RunResult): Omit<Verdict, 'name' | 'method'>;
}

export function methodOf(probe: Pick<Probe, 'command' | 'args'>): string {
  return [probe.command, ...probe.args].join(' ');
}

export function firstLine(text: string): string {
  return text.trim().split('\n')[0]?.trim() ?? '';
}

/** A probe that did not run to its end is absent, and the reason says what happened. */
export function failedToRun(result: RunResult): Omit<Verdict, 'name' | 'method'> | undefined {
  if (!result.failure) return undefined;
  return { present: false, detail: '', reason: result.failure.message };
}

/** What a tool said when it failed: its own words when it gave any. */
export function complaint(result: RunResult): string {
  const said = firstLine(result.stderr) || firstLine(result.stdout);
  return said ? `${said} (exit ${result.code})` : `exit ${result.code} with no output`;
}
