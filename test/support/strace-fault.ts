import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { systemRunner, type RunResult } from '../../src/core/system/runner.js';
import { projectDir } from './cli.js';

/**
 * A built program run under strace with a system call made to fail (`-e inject=CALL:error=CODE:when=N`):
 * the Nth such call of a thread gets CODE instead of reaching the disk. libuv's io_uring is off and its
 * pool is one thread, so that the calls go through the traced system calls in a stable order. The order
 * is stable for the program's own calls, not for libuv's wake-ups (a write to its eventfd, made when a
 * thread's work is posted back): a run says which call was made to fail, and a caller whose fault
 * landed on one of those runs again.
 */
export interface Injection {
  call: string;
  error: string;
  when: number;
  /** Follow the threads too (the pool's fsyncs and renames); a write is injected on the main thread only, where libuv's own writes to its eventfd do not come after ours. */
  threads: boolean;
}

const ENV = { UV_USE_IO_URING: '0', UV_THREADPOOL_SIZE: '1' };

/** A traced run, and the line of the call that was made to fail (`-y` names its descriptor's path): undefined when the run never reached it. */
export interface TracedRun extends RunResult {
  injected?: string;
}

export async function runTraced(program: 'mesh-host', args: string[], injection: Injection, work: string, timeoutMs = 60_000): Promise<TracedRun> {
  const out = join(work, 'injected.txt');
  const strace = ['-qq', '-y', '-o', out, ...(injection.threads ? ['-f'] : []), '-e', `trace=${injection.call}`, '-e', `inject=${injection.call}:error=${injection.error}:when=${injection.when}`];
  const run = await systemRunner().run('strace', [...strace, process.execPath, `${projectDir}bin/${program}`, ...args], { timeoutMs, env: { ...process.env, ...ENV } });
  return { ...run, injected: readFileSync(out, 'utf8').split('\n').find((line) => line.includes('(INJECTED)')) };
}

/**
 * The calls a clean run makes, in order, per thread: for each call the numbers (1-based, of its own
 * thread) of those that name a path under one of `under` (`-y` shows a descriptor's path), the most any
 * thread made. A walk injects at each of them.
 */
export async function tracedCalls(program: 'mesh-host', args: string[], calls: string[], threads: boolean, under: string[], work: string): Promise<Record<string, number[]>> {
  const out = join(work, 'trace.txt');
  const run = await systemRunner().run('strace', ['-qq', '-y', '-o', out, ...(threads ? ['-f'] : []), '-e', `trace=${calls.join(',')}`, process.execPath, `${projectDir}bin/${program}`, ...args], { timeoutMs: 60_000, env: { ...process.env, ...ENV } });
  if (run.code !== 0) throw new Error(`the clean traced run failed: ${run.stderr}`);
  const counts = new Map<string, number>();
  const found: Record<string, Set<number>> = Object.fromEntries(calls.map((c) => [c, new Set<number>()]));
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    const m = /^(?:(\d+) +)?(\w+)\((.*)$/.exec(line);
    if (!m || !(m[2]! in found)) continue;
    const key = `${m[1] ?? 'main'} ${m[2]}`;
    const n = (counts.get(key) ?? 0) + 1;
    counts.set(key, n);
    if (under.some((dir) => m[3]!.includes(dir) || m[3]!.includes('/proc/self/fd/'))) found[m[2]!]!.add(n);
  }
  return Object.fromEntries(Object.entries(found).map(([c, set]) => [c, [...set].sort((a, b) => a - b)]));
}
