import { kindSpec, type WordsOf } from '../../core/vocabulary/kind-spec.js';
import { inhibitProblems } from '../../core/vocabulary/inhibit-rules.js';
import { pathProblem } from '../../core/vocabulary/paths.js';
import type { Problem } from '../../core/vocabulary/problem.js';
import { isSealed } from '../../core/vocabulary/sealed-value.js';
import type { ContainerResource } from './container-schema.js';

export type { ContainerResource } from './container-schema.js';

/** NAME@sha256:HEX, NAME being a registry path (host[:port]/path, lower case): a tag is not a version. */
const DIGEST_REF = /^[a-z0-9][a-z0-9._-]*(:[0-9]{1,5})?(\/[a-z0-9][a-z0-9._-]*)*@sha256:[0-9a-f]{64}$/;

/** The suffix a taken container's original is renamed with: no declared container may carry it. */
export const ORIGINAL_SUFFIX = '.mesh-original';

/**
 * The suffix a replacement is created under while the container it replaces still runs: no declared
 * container may carry it either.
 */
export const PREPARED_SUFFIX = '.mesh-next';

/** What the schema cannot say of a container: the image's digest, normal volume paths, secrets named in env. */
function containerProblems(r: ContainerResource, at: string): Problem[] {
  const problems: Problem[] = [];
  if ('ref' in r.image && !DIGEST_REF.test(r.image.ref)) {
    problems.push({
      path: `${at}/image/ref`,
      message: r.image.ref.includes('@')
        ? `'${r.image.ref}' is not NAME@sha256:DIGEST (a lower-case registry path, 64 hex digits)`
        : `'${r.image.ref}' carries no digest: an image is declared as NAME@sha256:DIGEST, a tag is not a version`,
    });
  }
  if (r.name.endsWith(ORIGINAL_SUFFIX)) problems.push({ path: `${at}/name`, message: `a name ending in '${ORIGINAL_SUFFIX}' is kept for taken originals` });
  if (r.name.endsWith(PREPARED_SUFFIX)) problems.push({ path: `${at}/name`, message: `a name ending in '${PREPARED_SUFFIX}' is kept for replacements being made` });
  (r.volumes ?? []).forEach((volume, j) => {
    const [host, inside] = volume.split(':') as [string, string];
    const why = pathProblem(host) ?? pathProblem(inside);
    if (why) problems.push({ path: `${at}/volumes/${j}`, message: why });
  });
  // A sealed value is a secret: one not named sensitive would be shown once opened.
  for (const [name, value] of Object.entries(r.env ?? {})) {
    if (isSealed(value) && !(r.sensitiveEnv ?? []).includes(name)) problems.push({ path: `${at}/env/${name}`, message: `a sealed value, but '${name}' is not named in sensitiveEnv` });
  }
  (r.sensitiveEnv ?? []).forEach((name, j) => {
    if (!r.env || !Object.hasOwn(r.env, name)) problems.push({ path: `${at}/sensitiveEnv/${j}`, message: `'${name}' names no variable of env` });
  });
  return problems;
}

/** What a container's step changes beyond what every kind may: its image brought into the engine. */
export type ContainerChange =
  /** An image brought into the container engine: pulled by its digest, or loaded from an archive of the mesh. */
  | { kind: 'pull'; ref: string }
  | { kind: 'load'; object: string }
  /** A replacement made before an apply was cut short, given the declared name (it holds the declared spec). */
  | { kind: 'rename'; from: string; to: string }
  /** A container of this resource besides the one kept (a replacement's cut short): removed. */
  | { kind: 'remove-leftover'; name: string };

export const CONTAINER_WORDS: WordsOf<ContainerChange> = {
  pull: (change) => `pull ${change.ref}`,
  load: (change) => `load object ${change.object}`,
  rename: (change) => `rename ${change.from} → ${change.to}`,
  'remove-leftover': (change) => `remove the leftover ${change.name}`,
};

/** A container found under the declared name: renamed aside and stopped, given its name back on removal. */
export interface OriginalContainer {
  kind: 'container';
  id: string;
  /** Its name when found, and its name while aside. */
  name: string;
  aside: string;
  /** It was running when taken: it is started again when given back. */
  running: boolean;
}

export interface ContainerRecordFields {
  /**
   * The container the host made (the engine's labels say so too), its spec's digest, how long its stop
   * may take when it is removed, and the container found under its name and taken.
   */
  container?: { id: string; spec: string; stopTimeout?: number; original?: OriginalContainer };
}

export const containerSpec = kindSpec<ContainerResource, ContainerChange, ContainerRecordFields>({
  type: 'container',
  words: CONTAINER_WORDS,
  place: { field: 'name', what: 'container name', space: 'container' },
  rules: (container, at) => [...containerProblems(container, at), ...inhibitProblems(container, at)],
  refers: [{ field: 'restartOn', to: ['file', 'archive'] }],
});
