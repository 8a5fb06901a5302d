/** What the scale benchmarks share: the servers' processes, their figures, and the simulated hosts' names. */
import { execFileSync } from 'node:child_process';
import { errors } from '@nats-io/transport-node';
import type { Logger } from '../src/core/system/log.js';

/** The nats-server processes listening on these client ports (each started by the benchmark itself). */
export function serverPids(ports: number[]): number[] {
  return ports.flatMap((port) => {
    try {
      return [Number(execFileSync('pgrep', ['-f', `nats-server -a 127.0.0.1 -p ${port} `], { encoding: 'utf8' }).trim().split('\n')[0])];
    } catch {
      return [];
    }
  });
}

/** Retries while a new cluster elects its meta leader (up to a minute). */
export async function waitFor<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (attempt > 120) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}
/** What every simulated host of the fleet benchmark applied first: the file its plan and sends change. */
export const FLEET_FIRST_CONTENT = 'workers = 4\nlisten = 8080\n';

/** The node id of the i-th simulated host. */
export const simNode = (i: number) => `sim-${String(i).padStart(5, '0')}`;

/**
 * A control-side request that timed out, tried again: a server busy with thousands of hosts answers
 * late, not never, and an operator's tool would try again too. Only a timeout is retried. A request
 * that may have taken effect although its answer timed out (a put) says how to see that it did
 * (`tookEffect`), which is asked before each new try.
 */
export async function patiently(call: () => Promise<unknown>, tookEffect?: () => Promise<boolean>, tries = 6): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await call();
      return;
    } catch (err) {
      if (!(err instanceof errors.TimeoutError) || attempt >= tries) throw err;
      await new Promise((r) => setTimeout(r, 250 * attempt));
      if (tookEffect && (await patientlyAsk(tookEffect))) return;
    }
  }
}

const patientlyAsk = async (question: () => Promise<boolean>): Promise<boolean> => {
  let answer = false;
  await patiently(async () => (answer = await question()));
  return answer;
};

/** Runs one phase of a benchmark run; a failure says which phase it was. */
export async function phase<T>(name: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw new Error(`${name}: ${(err as Error).message}`, { cause: err });
  }
}

/** A logger that says nothing: simulated hosts by the thousand would drown the benchmark's own output. */
export function quietLogger(): Logger {
  const log = { fatal() {}, error() {}, warn() {}, info() {}, debug() {}, trace() {}, child: () => log };
  return log as unknown as Logger;
}

/**
 * Counts simulated hosts as they come up and says "up N" on stdout twice a second (N more since it last
 * said), until all `hosts` have: the benchmark that started the process reads it. Returns the counter.
 */
export function upReporter(hosts: number): () => void {
  let up = 0;
  let said = 0;
  const progress = setInterval(() => {
    if (up > said) process.stdout.write(`up ${up - said}\n`);
    said = up;
    if (said === hosts) clearInterval(progress);
  }, 500);
  return () => void up++;
}
