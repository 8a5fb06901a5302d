import { pathProblem } from './paths.js';
import type { Problem } from './problem.js';

/** What the schema cannot say of a lock: a normal absolute path, and a bound that has a lock to bound. */
export function inhibitProblems(r: { inhibitWhile?: string; inhibitMaxMs?: number }, at: string): Problem[] {
  const problems: Problem[] = [];
  const why = r.inhibitWhile === undefined ? undefined : pathProblem(r.inhibitWhile);
  if (why) problems.push({ path: `${at}/inhibitWhile`, message: why });
  if (r.inhibitMaxMs !== undefined && r.inhibitWhile === undefined) problems.push({ path: `${at}/inhibitMaxMs`, message: 'inhibitMaxMs bounds the wait for a lock, but no inhibitWhile names one' });
  return problems;
}
