import type { Declaration, Resource } from './schema.js';
import { checkHead, checkResource } from './checks.generated.js';
import { yielder } from '../system/yielder.js';
import type { KindSpec } from '../vocabulary/kind-spec.js';
import { pathProblem } from '../vocabulary/paths.js';
import type { Problem } from '../vocabulary/problem.js';
import { KIND_SPECS } from '../../kinds/kind-specs.js';

export type { Problem };
export { pathProblem };

/** Each kind's spec by its type, and the types as a refusal lists them. */
const SPECS = new Map<string, KindSpec>(KIND_SPECS.map((spec) => [spec.type, spec as unknown as KindSpec]));
const TYPES_LISTED = `${KIND_SPECS.slice(0, -1).map((spec) => spec.type).join(', ')} or ${KIND_SPECS[KIND_SPECS.length - 1]!.type}`;

/**
 * A valid declaration is checked by standalone validators generated from the schema at build time
 * (scripts/gen-checks.ts), so start-up loads no schema compiler. Only an invalid one loads TypeBox,
 * to name each problem by its JSON path.
 */
async function explain(value: unknown, schema: 'head' | keyof typeof checkResource, prefix: string): Promise<Problem[]> {
  const validator = await (explainers[schema] ??= compileExplainer(schema));
  return describe(validator.Errors(value) as Iterable<SchemaError>, prefix, value);
}

type Explainer = { Errors(value: unknown): Iterable<unknown> };
/** Compiled once each, when first needed: compiling takes milliseconds, and a stream of bad input would pay it every time. */
const explainers: Partial<Record<'head' | keyof typeof checkResource, Promise<Explainer>>> = {};
async function compileExplainer(schema: 'head' | keyof typeof checkResource): Promise<Explainer> {
  const [{ Compile }, { DeclarationHead, RESOURCE_SCHEMAS }] = await Promise.all([import('typebox/compile'), import('./schema.js')]);
  return Compile(schema === 'head' ? DeclarationHead : RESOURCE_SCHEMAS[schema]);
}

interface SchemaError {
  instancePath: string;
  message: string;
  keyword: string;
  params: Record<string, unknown>;
}

function describe(errors: Iterable<SchemaError>, prefix: string, value: unknown): Problem[] {
  const problems: Problem[] = [];
  const list = [...errors];
  // A choice of constants (`state`: running or stopped) fails once a constant and once as a whole: said
  // once, with the values it may take.
  const allowed = new Map<string, unknown[]>();
  for (const e of list) if (e.keyword === 'const') allowed.set(e.instancePath, [...(allowed.get(e.instancePath) ?? []), e.params.allowedValue]);
  for (const e of list) {
    const path = prefix + e.instancePath || '/';
    const found = valueAt(value, e.instancePath);
    // `additionalProperties: false` reports each extra field twice; the field's own line names it.
    if (e.keyword === 'boolean') problems.push({ path: prefix + e.instancePath, message: 'unknown field' });
    else if (allowed.has(e.instancePath)) {
      if (e.keyword === 'anyOf' || (e.keyword === 'const' && allowed.get(e.instancePath)!.length === 1)) {
        problems.push({ path, message: `must be one of ${allowed.get(e.instancePath)!.map((v) => JSON.stringify(v)).join(', ')}, not ${shown(found)}` });
      }
    } else if (e.keyword === 'type') problems.push({ path, message: `${e.message}, not ${shown(found)}` });
    else if (e.keyword !== 'additionalProperties') problems.push({ path, message: e.message });
  }
  return problems;
}

/** The value at a JSON pointer (`/resources/2/state`), or undefined. */
function valueAt(value: unknown, pointer: string): unknown {
  let at = value;
  for (const key of pointer.split('/').slice(1)) at = at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[key.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
  return at;
}

/** What was found, its type named: `the string "1"`, `the number 644`, `null`. */
function shown(found: unknown): string {
  if (found === null) return 'null';
  if (Array.isArray(found)) return 'an array';
  if (typeof found === 'object') return 'an object';
  const text = JSON.stringify(found);
  return `the ${typeof found} ${text !== undefined && text.length > 40 ? `${text.slice(0, 37)}...` : text}`;
}

export interface ValidateOptions {
  /** The node this host is; a declaration for another is refused. */
  node?: string;
  /** Lets the event loop go now and then (a fresh one when not given, asked every 64 resources): 10,000 resources take tens of milliseconds. */
  pause?: () => Promise<void>;
}

/**
 * The pause is asked for once every so many resources: a resource is checked in microseconds, and an
 * await for each of 10,000 (three passes) cost the check more than the pauses' purpose is worth.
 */
const PAUSE_EVERY = 64;

export type Validated = { ok: true; declaration: Declaration } | { ok: false; problems: Problem[] };

/**
 * The whole vocabulary, strictly: anything outside it refuses the whole declaration, and every
 * problem is named by its JSON path. Reads nothing on the machine.
 */
export async function validateDeclaration(value: unknown, options: ValidateOptions = {}): Promise<Validated> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, problems: [{ path: '/', message: 'a declaration is a JSON object' }] };
  }
  // Check first (compiled, fast); ask for the errors only of what fails.
  const problems = checkHead(value) ? [] : (await explain(value, 'head', '')).filter((p) => !p.path.startsWith('/resources/'));
  const raw = value as { version?: unknown; node?: unknown; resources?: unknown };
  if (raw.version !== undefined && raw.version !== 1) {
    problems.splice(0, problems.length, ...problems.filter((p) => p.path !== '/version'));
    const message = typeof raw.version === 'number' ? `unknown version ${raw.version} (this host speaks version 1)` : `must be the number 1, not ${shown(raw.version)}`;
    problems.unshift({ path: '/version', message });
  }
  if (options.node !== undefined && typeof raw.node === 'string' && raw.node !== options.node) {
    problems.push({ path: '/node', message: `declared for node '${raw.node}', but this is '${options.node}'`, wrongNode: true });
  }
  const resources = Array.isArray(raw.resources) ? (raw.resources as unknown[]) : [];
  const pause = options.pause ?? yielder();
  for (let i = 0; i < resources.length; i++) {
    const found = checkOneResource(resources[i], i);
    if (found !== undefined) problems.push(...(found instanceof Promise ? await found : found));
    if (i % PAUSE_EVERY === 0) await pause();
  }
  if (problems.length === 0) problems.push(...(await checkRelations(resources as Resource[], pause)));
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, declaration: value as Declaration };
}

/** Synchronous for a valid resource (the hot path: undefined, nothing made); a promise of its problems otherwise. */
function checkOneResource(resource: unknown, index: number): Problem[] | Promise<Problem[]> | undefined {
  if (typeof resource !== 'object' || resource === null || Array.isArray(resource)) {
    return [{ path: `/resources/${index}`, message: 'a resource is a JSON object' }];
  }
  const type = (resource as { type?: unknown }).type;
  const spec = typeof type === 'string' && Object.hasOwn(checkResource, type) ? SPECS.get(type) : undefined;
  if (spec === undefined) {
    return [{ path: `/resources/${index}/type`, message: `unknown resource type ${JSON.stringify(type)} (${TYPES_LISTED})` }];
  }
  const at = `/resources/${index}`;
  const path = spec.atPath ? (resource as { path?: unknown }).path : undefined;
  const why = typeof path === 'string' ? pathProblem(path) : undefined;
  if (checkResource[type as keyof typeof checkResource](resource)) {
    const found = [...(why ? [{ path: `${at}/path`, message: why }] : []), ...(spec.rules?.(resource as { type: string }, at) ?? [])];
    return found.length > 0 ? found : undefined;
  }
  return explain(resource, type as keyof typeof checkResource, at).then((problems) =>
    why && problems.every((p) => p.path !== `${at}/path`) ? [...problems, { path: `${at}/path`, message: why }] : problems,
  );
}

/** Rules between resources: unique ids and places, references naming declared resources of the kinds they may, paths after their directories. */
async function checkRelations(resources: Resource[], pause: () => Promise<void>): Promise<Problem[]> {
  const seen: Seen = { problems: [], ids: new Map(), places: new Map() };
  for (let i = 0; i < resources.length; i++) {
    noteUnique(resources[i]!, i, seen);
    if (i % PAUSE_EVERY === 0) await pause();
  }
  for (let i = 0; i < resources.length; i++) {
    checkReferences(resources, i, seen);
    if (i % PAUSE_EVERY === 0) await pause();
  }
  return seen.problems;
}

/** The ids, and the places in each space (paths, units, container names…), each at its first index, and the problems found. */
interface Seen {
  problems: Problem[];
  ids: Map<string, number>;
  places: Map<string, Map<string, number>>;
}

const fieldOf = (r: Resource, field: string): unknown => (r as unknown as Record<string, unknown>)[field];

/** An id, and a place in its kind's space, declared once. */
function noteUnique(r: Resource, i: number, { problems, ids, places }: Seen): void {
  const first = ids.get(r.id);
  if (first !== undefined) problems.push({ path: `/resources/${i}/id`, message: `id '${r.id}' is declared twice (first at /resources/${first})` });
  else ids.set(r.id, i);
  const { field, what, space } = SPECS.get(r.type)!.place;
  let seen = places.get(space);
  if (seen === undefined) places.set(space, (seen = new Map()));
  const value = fieldOf(r, field) as string;
  const other = seen.get(value);
  if (other !== undefined) problems.push({ path: `/resources/${i}/${field}`, message: `${what} '${value}' is declared twice (first at /resources/${other})` });
  else seen.set(value, i);
}

/** What a resource names by id is declared and of a kind it may name; a path comes after its declared directory and outside any archive. */
function checkReferences(resources: Resource[], i: number, { problems, ids, places }: Seen): void {
  const r = resources[i]!;
  const spec = SPECS.get(r.type)!;
  for (const { field, to } of spec.refers ?? []) {
    ((fieldOf(r, field) as string[] | undefined) ?? []).forEach((ref, j) => {
      const target = ids.get(ref);
      if (target === undefined || !to.includes(resources[target]!.type)) {
        problems.push({ path: `/resources/${i}/${field}/${j}`, message: `'${ref}' names no declared ${to.join(' or ')}` });
      }
    });
  }
  if (!spec.atPath) return;
  const paths = places.get('path')!;
  const path = fieldOf(r, 'path') as string;
  // Walking up once: a declared parent directory must come before what it holds (the apply goes in
  // order), and nothing may be declared inside an archive's target (the archive owns that tree). The
  // paths are absolute and normal by now: each directory above is a cut at a slash.
  for (let dir = path.slice(0, path.lastIndexOf('/')); dir !== ''; dir = dir.slice(0, dir.lastIndexOf('/'))) {
    const above = paths.get(dir);
    if (above === undefined) continue;
    if (above > i) problems.push({ path: `/resources/${i}/path`, message: `'${path}' comes before its directory at /resources/${above}` });
    if (SPECS.get(resources[above]!.type)!.atPath?.holdsTree) problems.push({ path: `/resources/${i}/path`, message: `'${path}' lies inside the ${resources[above]!.type} at /resources/${above}` });
  }
}
