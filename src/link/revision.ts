/** A KV write refused because the key moved since it was read (wrong last sequence): read again and redo. */
const CONFLICTS = new Set([10071, 10164]);

export function isRevisionConflict(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' && CONFLICTS.has(code);
}
