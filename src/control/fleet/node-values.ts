import { readFileSync } from 'node:fs';
import { refused } from '../../core/system/errors.js';
import type { Enrolment } from '../../link/enrolment.js';
import { describeSelector, matches, parseSelector, type Labels, type SelectorTerm } from './labels.js';

/**
 * Per-node values, looked up in layers as Hiera does: the node's own, then each label selection in the
 * order the file lists them (the first that matches the node and holds the key wins), then the values
 * for all. The file (values.json in the mesh directory, or --values FILE):
 *
 *   { "all": { "dns": "10.0.0.53" },
 *     "labels": [ { "select": "role=web,site=ams", "values": { "port": 8443 } }, { "select": "role=web", "values": { "port": 8080 } } ],
 *     "nodes": { "web-3": { "port": 9000 } } }
 *
 * Built in, never in the file: `node.name` and `node.labels.KEY`.
 */
export interface NodeValues {
  all: Record<string, unknown>;
  labels: Array<{ select: string; selector: SelectorTerm[]; values: Record<string, unknown> }>;
  nodes: Record<string, Record<string, unknown>>;
}

export const EMPTY_VALUES: NodeValues = { all: {}, labels: [], nodes: {} };

/** A key the operator names: letters, digits and _ . - ; `node.` is the built-in's. */
const KEY = /^[A-Za-z_][A-Za-z0-9_.-]{0,127}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function keyProblems(values: unknown, at: string): string[] {
  if (!isObject(values)) return [`${at}: an object of key: value is needed`];
  return Object.keys(values).flatMap((k) => (!KEY.test(k) ? [`${at}/${k}: a key is letters, digits and _ . - (starting with a letter or _)`] : k.startsWith('node.') ? [`${at}/${k}: keys under node. are built in (node.name, node.labels.KEY)`] : []));
}

/** The file's text as values, or refused naming each wrong place by its JSON path. */
export function parseNodeValues(text: string, source: string): NodeValues {
  let file: unknown;
  try {
    file = JSON.parse(text);
  } catch (err) {
    throw refused(`${source}: not JSON: ${(err as Error).message}`);
  }
  if (!isObject(file)) throw refused(`${source}: the values file is a JSON object with "all", "labels" and "nodes"`);
  const problems: string[] = [];
  for (const k of Object.keys(file)) if (!['all', 'labels', 'nodes'].includes(k)) problems.push(`/${k}: not a part of the values file (all, labels, nodes)`);
  if (file.all !== undefined) problems.push(...keyProblems(file.all, '/all'));
  const labels: NodeValues['labels'] = [];
  if (file.labels !== undefined && !Array.isArray(file.labels)) problems.push('/labels: a list of { "select": "k=v,…", "values": {…} } is needed');
  for (const [i, layer] of (Array.isArray(file.labels) ? file.labels : []).entries()) {
    if (!isObject(layer) || typeof layer.select !== 'string') {
      problems.push(`/labels/${i}: { "select": "k=v,…", "values": {…} } is needed`);
      continue;
    }
    const selector = parseSelector(layer.select);
    if (typeof selector === 'string') problems.push(`/labels/${i}/select: ${selector}`);
    const keyed = keyProblems(layer.values, `/labels/${i}/values`);
    problems.push(...keyed);
    if (typeof selector !== 'string' && keyed.length === 0) labels.push({ select: describeSelector(selector), selector, values: layer.values as Record<string, unknown> });
  }
  if (file.nodes !== undefined && !isObject(file.nodes)) problems.push('/nodes: an object of node: { key: value } is needed');
  for (const [node, values] of Object.entries(isObject(file.nodes) ? file.nodes : {})) problems.push(...keyProblems(values, `/nodes/${node}`));
  if (problems.length) throw refused(`${source}: the values file is not valid; nothing was sent`, problems);
  return { all: (file.all as Record<string, unknown>) ?? {}, labels, nodes: (file.nodes as Record<string, Record<string, unknown>>) ?? {} };
}

/** The values file at `path`, or refused naming it; none at all when it does not exist and was not asked for by name. */
export function readNodeValues(path: string, required: boolean): NodeValues {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (!required && (err as NodeJS.ErrnoException).code === 'ENOENT') return EMPTY_VALUES;
    throw refused(`${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  return parseNodeValues(text, path);
}

/** Each node's labels, as its enrolment holds them. */
export function labelsOf(enrolled: Array<{ node: string; enrolment: Enrolment }>): (node: string) => Labels | undefined {
  const labels = new Map(enrolled.map((e) => [e.node, e.enrolment.labels]));
  return (node) => labels.get(node);
}

/** Where a value was found: `node`, `labels role=web`, `all`, or `built in`. */
export type ValueSource = 'node' | `labels ${string}` | 'all' | 'built in';

export type Lookup = { found: true; value: unknown; from: ValueSource } | { found: false; looked: string[] };

/** The node's value of `key`, most specific layer first. */
export function lookUp(values: NodeValues, node: string, labels: Labels | undefined, key: string): Lookup {
  if (key === 'node.name') return { found: true, value: node, from: 'built in' };
  if (key.startsWith('node.labels.')) {
    const label = key.slice('node.labels.'.length);
    return labels && Object.hasOwn(labels, label) ? { found: true, value: labels[label], from: 'built in' } : { found: false, looked: [`the labels of ${node}`] };
  }
  const own = values.nodes[node];
  if (own && Object.hasOwn(own, key)) return { found: true, value: own[key], from: 'node' };
  for (const layer of values.labels) if (matches(labels, layer.selector) && Object.hasOwn(layer.values, key)) return { found: true, value: layer.values[key], from: `labels ${layer.select}` };
  if (Object.hasOwn(values.all, key)) return { found: true, value: values.all[key], from: 'all' };
  return { found: false, looked: [`nodes/${node}`, ...values.labels.filter((l) => matches(labels, l.selector)).map((l) => `labels ${l.select}`), 'all'] };
}

/** `{{ key }}` inside a `$text`. */
const PLACE = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g;

/** A reference: `{"$value": "key"}` (with an optional "default") or `{"$text": "… {{ key }} …"}`, and nothing else in the object. */
type Reference = { kind: 'value'; key: string; fallback?: { value: unknown } } | { kind: 'text'; text: string };

function referenceOf(v: Record<string, unknown>): Reference | undefined {
  const keys = Object.keys(v);
  if (typeof v.$value === 'string' && keys.every((k) => k === '$value' || k === 'default')) return { kind: 'value', key: v.$value, ...('default' in v ? { fallback: { value: v.default } } : {}) };
  if (typeof v.$text === 'string' && keys.length === 1) return { kind: 'text', text: v.$text };
  return undefined;
}

/**
 * The declaration's one map whose keys are the operator's own: a container's env. The schema takes any
 * name there, `$value` too, so the map itself is never read as a reference (its values may be).
 */
const OWN_KEYS = 'env';

/** Whether the declaration names any value: one that names none is sent as it is, byte for byte. */
export function usesValues(value: unknown, ownKeys = false): boolean {
  if (Array.isArray(value)) return value.some((v) => usesValues(v));
  if (!isObject(value)) return false;
  return (!ownKeys && referenceOf(value) !== undefined) || Object.entries(value).some(([k, v]) => usesValues(v, k === OWN_KEYS));
}

/** A missing value, by the key and where it was looked for. */
export interface Missing {
  key: string;
  path: string;
  looked: string[];
}

/** The node's own declaration: each reference replaced by its value; what it used, and what it lacks. */
export interface Rendered {
  declaration: Record<string, unknown>;
  /** Each value used, where it came from, and whether it landed where nothing is shown (a sensitive content or env). */
  used: Array<{ key: string; value: unknown; from: ValueSource; sensitive: boolean }>;
  missing: Missing[];
}

/** Whether a JSON path of the declaration is a sensitive file's content or a container's sensitive env. */
function sensitiveAt(declaration: Record<string, unknown>, path: string): boolean {
  const m = /^\/resources\/(\d+)\/(content|env\/([^/]+))/.exec(path);
  const resource = m && Array.isArray(declaration.resources) ? (declaration.resources[Number(m[1])] as Record<string, unknown> | undefined) : undefined;
  if (!m || !isObject(resource)) return false;
  return m[2] === 'content' ? resource.sensitive === true : Array.isArray(resource.sensitiveEnv) && resource.sensitiveEnv.includes(m[3]);
}

/**
 * Renders the declaration for one node (pure: the values and labels are given). A reference is an
 * object whose keys start with `$`, which no valid declaration holds where a reference is read (every
 * object of the schema names its fields; the env map, whose names are the operator's, is never one
 * itself): no declaration valid before changes meaning.
 */
export function renderFor(fields: Record<string, unknown>, node: string, labels: Labels | undefined, values: NodeValues): Rendered {
  const used: Array<{ key: string; value: unknown; from: ValueSource; path: string }> = [];
  const missing: Missing[] = [];
  const find = (key: string, path: string): Lookup => {
    const found = lookUp(values, node, labels, key);
    if (found.found) used.push({ key, value: found.value, from: found.from, path });
    else if (!missing.some((m) => m.key === key)) missing.push({ key, path, looked: found.looked });
    return found;
  };
  const walk = (value: unknown, path: string, ownKeys = false): unknown => {
    if (Array.isArray(value)) return value.map((v, i) => walk(v, `${path}/${i}`));
    if (!isObject(value)) return value;
    const ref = ownKeys ? undefined : referenceOf(value);
    if (ref?.kind === 'value') {
      if (ref.fallback && !lookUp(values, node, labels, ref.key).found) return ref.fallback.value;
      const found = find(ref.key, path);
      return found.found ? found.value : null;
    }
    if (ref?.kind === 'text') {
      return ref.text.replace(PLACE, (_all, key: string) => {
        const found = find(key, path);
        if (!found.found) return '';
        return typeof found.value === 'string' || typeof found.value === 'number' || typeof found.value === 'boolean' ? String(found.value) : JSON.stringify(found.value);
      });
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, `${path}/${k}`, k === OWN_KEYS)]));
  };
  const declaration = walk(fields, '') as Record<string, unknown>;
  // A key used in several places is said once; sensitive if any place it went is.
  const said = new Map<string, Rendered['used'][number]>();
  for (const u of used) {
    const sensitive = sensitiveAt(declaration, u.path);
    const before = said.get(u.key);
    said.set(u.key, { key: u.key, value: u.value, from: u.from, sensitive: sensitive || (before?.sensitive ?? false) });
  }
  return { declaration, used: [...said.values()], missing };
}

/** `port=8443 (node), dns=10.0.0.53 (all)`: the values a node's copy used, a sensitive one never shown. */
export function describeUsed(used: Rendered['used']): string {
  return used.map((u) => `${u.key}=${u.sensitive ? '(sensitive: not shown)' : JSON.stringify(u.value)} (${u.from})`).join(', ');
}

/**
 * The maker of each node's copy: the declaration as it is when it names no value, else rendered for the
 * node, refused naming the node and each key it lacks.
 */
export function copyMaker(fields: Record<string, unknown>, values: NodeValues, labelsOf: (node: string) => Labels | undefined): (node: string) => Record<string, unknown> {
  if (!usesValues(fields)) return () => fields;
  return (node) => {
    const rendered = renderFor(fields, node, labelsOf(node), values);
    if (rendered.missing.length > 0) throw refused(describeMissing(node, rendered.missing));
    return rendered.declaration;
  };
}

/** `web-3 has no value for port (at /resources/0/content; looked in nodes/web-3, labels role=web, all)`. */
export function describeMissing(node: string, missing: Missing[]): string {
  return `${node} has no value for ${missing.map((m) => `${m.key} (at ${m.path || '/'}; looked in ${m.looked.join(', ')})`).join(' and ')}: nothing was sent to ${node}`;
}
