import { posix } from 'node:path';

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
