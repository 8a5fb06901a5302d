import { join } from 'node:path';
import { pathProblem } from '../vocabulary/paths.js';

/**
 * Where a declared path is on disk: under the root, by concatenation for the absolute, normal paths a
 * declaration holds (what path.join would give, without normalising 10,000 paths again).
 */
export function realPaths(root: string): (target: string) => string {
  const base = join(root, '.').replace(/\/+$/, '');
  if (!root.startsWith('/')) return (target) => join(root, target);
  return (target) => (pathProblem(target) === undefined ? base + target : join(root, target));
}
