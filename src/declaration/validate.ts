import { posix } from 'node:path';
import type { ContainerResource, Declaration, Resource, ServiceResource } from './schema.js';
import { checkHead, checkResource } from './checks.generated.js';
import { isCanonicalBase64 } from './base64.js';
import { yielder } from '../system/yielder.js';
import { containerProblems } from './container-rules.js';
import { inhibitProblems } from './inhibit-rules.js';

/** One thing wrong with a declaration, at its JSON path. */
export interface Problem {
  path: string;
  message: string;
  /** Set when the problem is not the vocabulary's: a declaration for another node. */
  wrongNode?: true;
}

/**
 * A valid declaration is checked by standalone validators generated from the schema at build time
 * (scripts/gen-checks.ts), so start-up loads no schema compiler. Only an invalid one loads TypeBox,
 * to name each problem by its JSON path.
 */
async function explain(value: unknown, schema: 'head' | keyof typeof checkResource, prefix: string): Promise<Problem[]> {
  const validator = await (explainers[schema] ??= compileExplainer(schema));
  return describe(validator.Errors(value) as Iterable<SchemaError>, prefix);
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

function describe(errors: Iterable<SchemaError>, prefix: string): Problem[] {
  const problems: Problem[] = [];
  for (const e of errors) {
    // `additionalProperties: false` reports each extra field twice; the field's own line names it.
    if (e.keyword === 'boolean') problems.push({ path: prefix + e.instancePath, message: 'unknown field' });
    else if (e.keyword !== 'additionalProperties') problems.push({ path: prefix + e.instancePath || '/', message: e.message });
  }
  return problems;
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
    problems.unshift({ path: '/version', message: `unknown version ${JSON.stringify(raw.version)} (this host speaks version 1)` });
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
  if (typeof type !== 'string' || !Object.hasOwn(checkResource, type)) {
    return [{ path: `/resources/${index}/type`, message: `unknown resource type ${JSON.stringify(type)} (directory, file, archive, service or container)` }];
  }
  const path = (resource as { path?: unknown }).path;
  const why = typeof path === 'string' ? pathProblem(path) : undefined;
  if (checkResource[type as keyof typeof checkResource](resource)) {
    if (type === 'container' || type === 'service') {
      const at = `/resources/${index}`;
      const found = [...(type === 'container' ? containerProblems(resource as ContainerResource, at, pathProblem) : []), ...inhibitProblems(resource as ServiceResource, at, pathProblem)];
      return found.length > 0 ? found : undefined;
    }
    const file = resource as { encoding?: string; content: string };
    const notBase64 = file.encoding === 'base64' && !isCanonicalBase64(file.content);
    if (why === undefined && !notBase64) return undefined;
    const at = `/resources/${index}`;
    const found = why ? [{ path: `${at}/path`, message: why }] : [];
    if (notBase64) found.push({ path: `${at}/content`, message: 'not base64 (canonical, padded), as its encoding says' });
    return found;
  }
  const at = `/resources/${index}`;
  return explain(resource, type as keyof typeof checkResource, at).then((problems) =>
    why && problems.every((p) => p.path !== `${at}/path`) ? [...problems, { path: `${at}/path`, message: why }] : problems,
  );
}

/** A doubled slash, a '.' or '..' component, or a trailing slash. */
const NOT_NORMAL = /\/\/|\/\.\.?(\/|$)|\/$/;

/** Absolute and normal: no '.', '..', doubled or trailing slashes, no NUL; never the root itself. */
export function pathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return `'${path}' is not absolute`;
  if (path.includes('\0')) return 'a path may not hold a NUL byte';
  if (path === '/') return 'the root itself cannot be a resource';
  if (NOT_NORMAL.test(path)) {
    return `'${path}' is not a normal path (it normalises to '${posix.normalize(path).replace(/\/$/, '') || '/'}')`;
  }
  return undefined;
}

/** Rules between resources: unique ids and paths, restartOn naming declared files or archives, parents before children. */
async function checkRelations(resources: Resource[], pause: () => Promise<void>): Promise<Problem[]> {
  const seen: Seen = { problems: [], ids: new Map(), paths: new Map(), units: new Map(), names: new Map() };
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

/** The ids, paths, units and container names seen so far, each at its first index, and the problems found. */
interface Seen {
  problems: Problem[];
  ids: Map<string, number>;
  paths: Map<string, number>;
  units: Map<string, number>;
  names: Map<string, number>;
}

/** An id, and a path, a unit or a container name, declared once. */
function noteUnique(r: Resource, i: number, { problems, ids, paths, units, names }: Seen): void {
  const first = ids.get(r.id);
  if (first !== undefined) problems.push({ path: `/resources/${i}/id`, message: `id '${r.id}' is declared twice (first at /resources/${first})` });
  else ids.set(r.id, i);
  const [seen, field, what, value] =
    r.type === 'service' ? [units, 'unit', 'unit', r.unit] : r.type === 'container' ? [names, 'name', 'container name', r.name] : [paths, 'path', 'path', r.path];
  const other = seen.get(value);
  if (other !== undefined) problems.push({ path: `/resources/${i}/${field}`, message: `${what} '${value}' is declared twice (first at /resources/${other})` });
  else seen.set(value, i);
}

/** A service's restartOn names declared files or archives; a path comes after its declared directory and outside any archive. */
function checkReferences(resources: Resource[], i: number, { problems, ids, paths }: Seen): void {
  const r = resources[i]!;
  if (r.type === 'service' || r.type === 'container') {
    (r.restartOn ?? []).forEach((ref, j) => {
      const target = ids.get(ref);
      if (target === undefined || (resources[target]!.type !== 'file' && resources[target]!.type !== 'archive')) {
        problems.push({ path: `/resources/${i}/restartOn/${j}`, message: `'${ref}' names no declared file or archive` });
      }
    });
    return;
  }
  // Walking up once: a declared parent directory must come before what it holds (the apply goes in
  // order), and nothing may be declared inside an archive's target (the archive owns that tree). The
  // paths are absolute and normal by now: each directory above is a cut at a slash.
  for (let dir = r.path.slice(0, r.path.lastIndexOf('/')); dir !== ''; dir = dir.slice(0, dir.lastIndexOf('/'))) {
    const above = paths.get(dir);
    if (above === undefined) continue;
    if (above > i) problems.push({ path: `/resources/${i}/path`, message: `'${r.path}' comes before its directory at /resources/${above}` });
    if (resources[above]!.type === 'archive') problems.push({ path: `/resources/${i}/path`, message: `'${r.path}' lies inside the archive at /resources/${above}` });
  }
}
