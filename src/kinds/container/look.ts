import type { Clock } from '../../core/system/clock.js';
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
 * whose restart count grew died in between (the engine restarted it); one not running is dead; one
 * running whose health check failed is not up either. A check still `starting` is given the benefit of
 * the doubt, as an activating unit is: the image's start period is its author's word on how long it takes.
 */
export function lookVerdict(first: Inspected, second: Inspected | undefined): string | undefined {
  if (!second) return 'is gone at the second look';
  if (second.startedAt !== first.startedAt || second.restartCount > first.restartCount) return `was restarted by the engine between the looks (${stateOf(second)})`;
  if (second.running && !up(second)) return `is running but its health check fails at the second look (${stateOf(second)})`;
  if (!up(second)) return `was running at the first look and is not at the second (${stateOf(second)})`;
  return undefined;
}

/** The first look, right after the action: a container already dead (or already unhealthy) fails at once. */
export function firstLookVerdict(first: Inspected): string | undefined {
  if (up(first) || first.state === 'restarting') return undefined;
  return first.running ? `is running but its health check fails right after it was started (${stateOf(first)})` : `is not running right after it was started (${stateOf(first)})`;
}

function redact(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of secrets) if (secret.length > 0) out = out.split(secret).join('(sensitive)');
  return out;
}

/** What a failed health check last printed: the first clue to why, when the container's own log is silent. */
const healthSaid = (seen: Inspected | undefined) => (seen?.health === 'unhealthy' && seen.healthOutput ? `; its last health check said: ${seen.healthOutput}` : '');

/** The failure's words: the container, what it was, its state and exit code (its failed check's words), and the last lines of its log. */
export async function failureOf(engine: ContainerEngine, w: Pick<Watched, 'id' | 'name' | 'action' | 'secrets'>, why: string, sinceMs: number, seen?: Inspected): Promise<string> {
  const log = await engine.logs(w.id, LOG_LINES).catch((err: Error) => `(its log cannot be read: ${err.message})`);
  const lines = redact(log, w.secrets).trimEnd();
  return `container ${w.name} ${why}${redact(healthSaid(seen), w.secrets)}, seen ${Math.round(sinceMs)} ms after the ${w.action}; the last ${LOG_LINES} lines of its log:${lines ? `\n${lines}` : ' (empty)'}`;
}

/** What a second look accepted but the report should say: a container whose health check has not passed yet. */
const acceptedNote = (w: Watched, seen: Inspected | undefined) =>
  seen?.health === 'starting' ? `container ${w.name} is running and its health check is still starting at the second look: accepted, as a unit still activating is (${stateOf(seen)})` : undefined;

/** One pause shared by every container the apply acted on, then one look at each: the failures, and what was accepted on trust. */
export async function secondLook(engine: ContainerEngine, clock: Clock, pauseMs: number, watched: Watched[]): Promise<{ failures: Array<{ resource: string; message: string }>; said: string[] }> {
  if (watched.length === 0) return { failures: [], said: [] };
  const waited = clock.monotonic() - Math.max(...watched.map((w) => w.actedAt));
  if (pauseMs - waited > 0) await clock.sleep(pauseMs - waited);
  const seen = await Promise.all(watched.map((w) => engine.inspect(w.id)));
  const failures: Array<{ resource: string; message: string }> = [];
  const said: string[] = [];
  for (const [i, w] of watched.entries()) {
    const why = lookVerdict(w.first, seen[i]);
    if (why) failures.push({ resource: w.resource, message: await failureOf(engine, w, why, clock.monotonic() - w.actedAt, seen[i]) });
    const note = why ? undefined : acceptedNote(w, seen[i]);
    if (note) said.push(note);
  }
  return { failures, said };
}
