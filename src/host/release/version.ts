import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What a build says about itself: the package's version and the commit it was built from. */
export interface BuildInfo {
  version: string;
  commit: string;
}

// Replaced by the bundler (scripts/build.mjs, scripts/release.mjs) with the version and commit of the build.
declare const __MESH_HOST_BUILD__: BuildInfo | undefined;

/**
 * The version and commit this program was built from. A bundle and a single executable carry them;
 * the unbundled output (tests, benchmarks) reads the package's own version and says it was not built.
 */
export function buildInfo(): BuildInfo {
  if (typeof __MESH_HOST_BUILD__ !== 'undefined') return __MESH_HOST_BUILD__;
  return { version: packageVersion(), commit: 'unbuilt' };
}

/** The package's version, found upwards from this file (the tsc output and the sources sit at different depths). */
function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let up = 0; up < 4; up += 1, dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version: string };
      if (pkg.name === 'mesh-host') return pkg.version;
    } catch {
      // not at this depth
    }
  }
  return 'unknown';
}

/** One line for `--version`: `mesh-host 0.1.0 (commit 9f47900…)`. */
export function versionLine(program: string): string {
  const { version, commit } = buildInfo();
  return `${program} ${version} (commit ${commit})`;
}

/** A release's name as a directory and in /etc/mesh-host/release: a version, never a path. */
export const RELEASE_NAME = /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/;
