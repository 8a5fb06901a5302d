/** `serving (mode converged, link up, worker idle)`: a lifecycle state value in one line (the page says it the same way). */
export function stateLine(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value !== 'object' || value === null) return 'unknown';
  return Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => (typeof v === 'string' ? `${k} ${v}` : `${k} (${stateLine(v)})`))
    .join(', ');
}
