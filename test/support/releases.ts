import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectDir } from './cli.js';
import { dropStaleBuilds, withBuildLock } from './build-lock.js';

/**
 * Single executables of this checkout, made by the release script (`--host-only`), kept in the
 * temporary folder under a digest of the sources so that test files and later runs share them.
 */
function sourcesDigest(): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const name of readdirSync(join(projectDir, dir)).sort()) {
      const rel = join(dir, name);
      if (statSync(join(projectDir, rel)).isDirectory()) walk(rel);
      else hash.update(rel).update(readFileSync(join(projectDir, rel)));
    }
  };
  for (const dir of ['src', 'machines']) walk(dir);
  for (const file of ['scripts/release.mjs', 'scripts/bundle.mjs', 'scripts/build-info.mjs', 'scripts/node-binary.mjs', 'package-lock.json']) hash.update(readFileSync(join(projectDir, file)));
  return hash.digest('hex').slice(0, 16);
}

/**
 * The path of a mesh-host single executable that says it is `version` (and, for a test build, fails as
 * asked), for this machine's architecture or, given `arch`, for that one (linux-arm64 runs under qemu here).
 */
export function releaseBuild(version: string, fault?: 'start' | 'apply', arch: NodeJS.Architecture = process.arch): string {
  const other = arch === process.arch ? '' : `-${arch}`;
  const dir = join(tmpdir(), `mesh-host-releases-${sourcesDigest()}`, `${version}${fault ? `-${fault}` : ''}${other}`);
  const executable = join(dir, 'mesh-host');
  if (existsSync(executable)) return executable;
  return withBuildLock(dir, () => {
    if (existsSync(executable)) return executable;
    const making = `${dir}.making-${process.pid}`;
    rmSync(making, { recursive: true, force: true });
    const made = spawnSync(process.execPath, ['scripts/release.mjs', '--host-only', '--version', version, '--out', making, ...(fault ? ['--fault', fault] : []), ...(other ? ['--arch', arch] : [])], { cwd: projectDir, encoding: 'utf8', timeout: 600_000 });
    if (made.status !== 0) throw new Error(`the release script failed (${made.status ?? made.signal}):\n${made.stderr}`);
    renameSync(making, dir);
    // Builds of older sources are some 90 MB each.
    dropStaleBuilds('mesh-host-releases-', join(dir, '..'));
    return executable;
  });
}
