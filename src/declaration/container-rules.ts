import type { ContainerResource } from './schema.js';
import type { Problem } from './validate.js';

/** NAME@sha256:HEX, NAME being a registry path (host[:port]/path, lower case): a tag is not a version. */
const DIGEST_REF = /^[a-z0-9][a-z0-9._-]*(:[0-9]{1,5})?(\/[a-z0-9][a-z0-9._-]*)*@sha256:[0-9a-f]{64}$/;

/** The suffix a taken container's original is renamed with: no declared container may carry it. */
export const ORIGINAL_SUFFIX = '.mesh-original';

/** What the schema cannot say of a container: the image's digest, normal volume paths, secrets named in env. */
export function containerProblems(r: ContainerResource, at: string, pathProblem: (path: string) => string | undefined): Problem[] {
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
  (r.volumes ?? []).forEach((volume, j) => {
    const [host, inside] = volume.split(':') as [string, string];
    const why = pathProblem(host) ?? pathProblem(inside);
    if (why) problems.push({ path: `${at}/volumes/${j}`, message: why });
  });
  (r.sensitiveEnv ?? []).forEach((name, j) => {
    if (!r.env || !Object.hasOwn(r.env, name)) problems.push({ path: `${at}/sensitiveEnv/${j}`, message: `'${name}' names no variable of env` });
  });
  return problems;
}
