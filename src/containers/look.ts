import type { Clock } from '../system/clock.js';
import type { ContainerEngine, Inspected } from './engine.js';

/** A container the apply started, restarted or replaced: looked at right after, and again after the pause. */
export interface Watched {
  resource: string;
  id: string;
  name: string;
  action: string;
  actedAt: number;
  first: Inspected;
  /** Values never shown: taken out of the log lines a failure quotes. */
  secrets: string[];
}

/** How many log lines a failure quotes. */
export const LOG_LINES = 20;

/** Up, or on its way (health `starting` is a running container whose check has not yet passed). */
const up = (c: Inspected) => c.running && c.health !== 'unhealthy';

const stateOf = (c: Inspected) => `${c.state}${c.health ? `, health ${c.health}` : ''}, exit code ${c.exitCode}, restarts ${c.restartCount}`;

/**
 * The verdict of the two looks, decided on what they saw alone: a container whose start time changed or
 * whose restart count grew died in between (the engine restarted it); one not running is dead.
 */
export function lookVerdict(first: Inspected, second: Inspected | undefined): string | undefined {
  if (!second) return 'is gone at the second look';
  if (second.startedAt !== first.startedAt || second.restartCount > first.restartCount) return `was restarted by the engine between the looks (${stateOf(second)})`;
  if (!up(second)) return `was running at the first look and is not at the second (${stateOf(second)})`;
  return undefined;
}

/** The first look, right after the action: a container already dead fails at once. */
export function firstLookVerdict(first: Inspected): string | undefined {
  return up(first) || first.state === 'restarting' ? undefined : `is not running right after it was started (${stateOf(first)})`;
}

function redact(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of secrets) if (secret.length > 0) out = out.split(secret).join('(sensitive)');
  return out;
}

/** The failure's words: the container, what it was, its state and exit code, and the last lines of its log. */
export async function failureOf(engine: ContainerEngine, w: Pick<Watched, 'id' | 'name' | 'action' | 'secrets'>, why: string, sinceMs: number): Promise<string> {
  const log = await engine.logs(w.id, LOG_LINES).catch((err: Error) => `(its log cannot be read: ${err.message})`);
  const lines = redact(log, w.secrets).trimEnd();
  return `container ${w.name} ${why}, seen ${Math.round(sinceMs)} ms after the ${w.action}; the last ${LOG_LINES} lines of its log:${lines ? `\n${lines}` : ' (empty)'}`;
}

/** One pause shared by every container the apply acted on, then one look at each. */
export async function secondLook(engine: ContainerEngine, clock: Clock, pauseMs: number, watched: Watched[]): Promise<Array<{ resource: string; message: string }>> {
  if (watched.length === 0) return [];
  const waited = clock.monotonic() - Math.max(...watched.map((w) => w.actedAt));
  if (pauseMs - waited > 0) await clock.sleep(pauseMs - waited);
  const seen = await Promise.all(watched.map((w) => engine.inspect(w.id)));
  const failures: Array<{ resource: string; message: string }> = [];
  for (const [i, w] of watched.entries()) {
    const why = lookVerdict(w.first, seen[i]);
    if (why) failures.push({ resource: w.resource, message: await failureOf(engine, w, why, clock.monotonic() - w.actedAt) });
  }
  return failures;
}
