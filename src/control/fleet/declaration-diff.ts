import { structuredPatch } from 'diff';

/** What stands for a value never shown. */
export const NOT_SHOWN = '(sensitive: not shown)';

type Fields = Record<string, unknown>;

const resourcesOf = (d: Fields): Fields[] => (Array.isArray(d.resources) ? (d.resources as unknown[]).filter((r): r is Fields => typeof r === 'object' && r !== null) : []);

/**
 * The declaration as it may be shown: a sensitive file's content and the values of a container's
 * sensitive env are replaced, whatever else is said of them.
 */
export function redacted(d: Fields): Fields {
  if (!Array.isArray(d.resources)) return d;
  return {
    ...d,
    resources: (d.resources as unknown[]).map((r) => {
      if (typeof r !== 'object' || r === null) return r;
      const resource = r as Fields;
      if (resource.sensitive === true && 'content' in resource) return { ...resource, content: NOT_SHOWN };
      const hidden = Array.isArray(resource.sensitiveEnv) ? new Set(resource.sensitiveEnv as unknown[]) : undefined;
      if (hidden && resource.env && typeof resource.env === 'object') {
        return { ...resource, env: Object.fromEntries(Object.entries(resource.env as Fields).map(([k, v]) => [k, hidden.has(k) ? NOT_SHOWN : v])) };
      }
      return resource;
    }),
  };
}

/** One field of a resource (or of the declaration) that differs. */
export interface FieldChange {
  field: string;
  from?: unknown;
  to?: unknown;
  /** A file's content: its unified diff, or that it is sensitive. */
  lines?: string[];
  sensitive?: true;
}

/** One resource added, removed or changed (by its id), or the declaration's own fields. */
export interface ResourceChange {
  change: 'added' | 'removed' | 'changed';
  /** `file conf /srv/app.conf`; `declaration` for the declaration's own fields. */
  resource: string;
  fields: FieldChange[];
}

const nameOf = (r: Fields) => [r.type, r.id, r.path ?? r.unit ?? r.name].filter((x) => typeof x === 'string').join(' ');
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The content's unified diff lines (hunks only), or none when equal. */
function contentLines(a: string, b: string): string[] {
  const patch = structuredPatch('a', 'b', a, b, '', '', { context: 2 });
  return patch.hunks.flatMap((h) => [`@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`, ...h.lines]);
}

function fieldChanges(a: Fields, b: Fields, leaveOut: string[]): FieldChange[] {
  const names = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((n) => !leaveOut.includes(n));
  const sensitive = a.sensitive === true || b.sensitive === true;
  const hiddenEnv = new Set([...(Array.isArray(a.sensitiveEnv) ? a.sensitiveEnv : []), ...(Array.isArray(b.sensitiveEnv) ? b.sensitiveEnv : [])] as unknown[]);
  const changes: FieldChange[] = [];
  for (const field of names) {
    if (same(a[field], b[field])) continue;
    if (field === 'content' && sensitive) {
      changes.push({ field, sensitive: true });
    } else if (field === 'content' && typeof a[field] === 'string' && typeof b[field] === 'string') {
      changes.push({ field, lines: contentLines(a[field], b[field]) });
    } else if (field === 'env' && hiddenEnv.size > 0) {
      const [x, y] = [(a.env ?? {}) as Fields, (b.env ?? {}) as Fields];
      for (const name of [...new Set([...Object.keys(x), ...Object.keys(y)])].filter((n) => !same(x[n], y[n]))) {
        changes.push(hiddenEnv.has(name) ? { field: `env.${name}`, sensitive: true } : { field: `env.${name}`, ...(name in x ? { from: x[name] } : {}), ...(name in y ? { to: y[name] } : {}) });
      }
    } else {
      changes.push({ field, ...(field in a ? { from: redactedValue(a, field) } : {}), ...(field in b ? { to: redactedValue(b, field) } : {}) });
    }
  }
  return changes;
}

const redactedValue = (r: Fields, field: string) => (field === 'content' && r.sensitive === true ? NOT_SHOWN : r[field]);

/**
 * What changes from declaration a to b: the declaration's own fields (its number left out), then each
 * resource by its id, added, removed or changed field by field. A sensitive content is said to change,
 * never shown.
 */
export function declarationChanges(a: Fields, b: Fields): ResourceChange[] {
  const changes: ResourceChange[] = [];
  const own = fieldChanges(a, b, ['resources', 'sequence', 'epoch']);
  if (own.length) changes.push({ change: 'changed', resource: 'declaration', fields: own });
  const before = new Map(resourcesOf(a).map((r) => [String(r.id), r]));
  const after = new Map(resourcesOf(b).map((r) => [String(r.id), r]));
  for (const [id, r] of before) if (!after.has(id)) changes.push({ change: 'removed', resource: nameOf(r), fields: [] });
  for (const [id, r] of after) {
    const old = before.get(id);
    if (!old) {
      changes.push({ change: 'added', resource: nameOf(r), fields: fieldChanges({}, r, ['type', 'id']) });
      continue;
    }
    const fields = fieldChanges(old, r, []);
    if (fields.length) changes.push({ change: 'changed', resource: nameOf(r), fields });
  }
  return changes;
}

const shown = (v: unknown) => (typeof v === 'string' && !v.includes('\n') ? v : JSON.stringify(v));

/** The changes as lines a person reads: `~ file conf /srv/app.conf`, then each field. */
export function formatChanges(changes: ResourceChange[]): string[] {
  if (changes.length === 0) return ['no difference'];
  const lines: string[] = [];
  const mark = { added: '+', removed: '-', changed: '~' } as const;
  for (const c of changes) {
    lines.push(`${mark[c.change]} ${c.resource}`);
    if (c.change === 'removed') continue;
    for (const f of c.fields) {
      if (f.sensitive) lines.push(`    ${f.field}: changed (sensitive: not shown)`);
      else if (f.lines) lines.push(`    ${f.field}:`, ...f.lines.map((l) => `      ${l}`));
      else if (c.change === 'added') lines.push(`    ${f.field}: ${shown(f.to)}`);
      else lines.push(`    ${f.field}: ${'from' in f ? shown(f.from) : '(none)'} → ${'to' in f ? shown(f.to) : '(none)'}`);
    }
  }
  return lines;
}
