import type { Declaration } from '../declaration/schema.js';

/** Resource types this host validates but cannot apply yet: refused whole, never half applied. */
const NOT_YET: ReadonlySet<string> = new Set([]);

export function unsupportedProblem(declaration: Declaration): string | undefined {
  const found = declaration.resources
    .map((r, i) => ({ r, i }))
    .filter(({ r }) => NOT_YET.has(r.type))
    .map(({ r, i }) => `/resources/${i} (${r.type} '${r.id}')`);
  return found.length ? `${found.join(', ')}: not supported yet` : undefined;
}
