import { closeSync, lstatSync, openSync, readFileSync, readSync, readlinkSync, renameSync, statSync, symlinkSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fsyncDirectory, writeDurably } from '../../core/system/durable.js';
import { CURRENT, EXECUTABLE, RELEASE_FILE, RELEASES_DIR } from '../../core/system/default-paths.js';
import type { CommandRunner } from '../../core/system/runner.js';
import { RELEASE_NAME } from './version.js';
import { releaseRefusal, type ReleaseKeys } from './verify-release.js';

/**
 * Where releases live on a machine, as the mesh declares them: each unpacked (by an archive resource or
 * the installer) under /var/lib/mesh-host/releases/<version>/, `current` linking the one that runs, and
 * the file /etc/mesh-host/release naming the one the mesh wants. All of it inside --root.
 */
export interface ReleaseLayout {
  releasesDir: string;
  releaseFile: string;
}

export { CURRENT, EXECUTABLE, RELEASE_FILE, RELEASES_DIR };
/** The launcher's memory of a release that failed its trial, in the state directory. */
export const FAILED_TRIAL_FILE = 'release-trial.json';

export function releaseLayout(root: string): ReleaseLayout {
  return { releasesDir: join(root, RELEASES_DIR), releaseFile: join(root, RELEASE_FILE) };
}

export const executableOf = (layout: ReleaseLayout, version: string) => join(layout.releasesDir, version, EXECUTABLE);

export type Found<T> = { ok: true; value: T } | { ok: false; problem: string };

/** The release `current` names: a version whose directory holds an executable. */
export function readCurrent(layout: ReleaseLayout): Found<string> {
  const link = join(layout.releasesDir, CURRENT);
  let target: string;
  try {
    target = readlinkSync(link);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { ok: false, problem: code === 'ENOENT' ? `${link} does not exist: no release is installed (mesh-host install)` : code === 'EINVAL' ? `${link} is not a link` : `${link} cannot be read (${code})` };
  }
  if (!RELEASE_NAME.test(target)) return { ok: false, problem: `${link} points to '${target}', which is not a release under ${layout.releasesDir}` };
  try {
    statSync(executableOf(layout, target));
  } catch {
    return { ok: false, problem: `${link} points to ${target}, which holds no ${EXECUTABLE}: the link points nowhere` };
  }
  return { ok: true, value: target };
}

/** The release the mesh names, or none when it names none (the file is absent). */
export function readDeclaredRelease(layout: ReleaseLayout): Found<string | undefined> {
  let text: string;
  try {
    text = readFileSync(layout.releaseFile, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true, value: undefined };
    return { ok: false, problem: `${layout.releaseFile} cannot be read (${(err as NodeJS.ErrnoException).code})` };
  }
  const version = text.trim();
  if (!RELEASE_NAME.test(version)) return { ok: false, problem: `${layout.releaseFile} does not name a release: '${version.slice(0, 80)}'` };
  return { ok: true, value: version };
}

/** ELF machine numbers (e_machine) of the architectures Node builds for Linux. */
const ELF_MACHINES: Record<string, number> = { x64: 62, arm64: 183, arm: 40, ia32: 3, ppc64: 21, s390x: 22, riscv64: 243, loong64: 258 };

/** Why a file is not an executable for this machine, or undefined when it is one. */
export function executableProblem(path: string): string | undefined {
  let stat;
  try {
    stat = lstatSync(path);
  } catch (err) {
    return `${path} does not exist (${(err as NodeJS.ErrnoException).code})`;
  }
  if (!stat.isFile()) return `${path} is not a regular file`;
  if ((stat.mode & 0o111) === 0) return `${path} is not executable (mode ${(stat.mode & 0o7777).toString(8)})`;
  const header = Buffer.alloc(20);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, header, 0, 20, 0);
  } finally {
    closeSync(fd);
  }
  if (header.readUInt32BE(0) !== 0x7f454c46) return `${path} is not an ELF executable`;
  const littleEndian = header[5] === 1;
  const machine = littleEndian ? header.readUInt16LE(18) : header.readUInt16BE(18);
  const wanted = ELF_MACHINES[process.arch];
  if (header[4] !== 2 || machine !== wanted) return `${path} is an executable for another machine (ELF class ${header[4]}, machine ${machine}; this one is ${process.arch}, machine ${wanted})`;
  return undefined;
}

/**
 * Why a release cannot be tried, or undefined when it can: unpacked, an executable for this machine,
 * signed by the release keys when the trust root pins some (its SHA256SUMS signed, the executable's
 * digest the one listed), and it runs here and says it is that release.
 */
export async function releaseProblem(layout: ReleaseLayout, version: string, runner: CommandRunner, keys?: ReleaseKeys): Promise<string | undefined> {
  const dir = join(layout.releasesDir, version);
  try {
    if (!statSync(dir).isDirectory()) return `${dir} is not a directory`;
  } catch {
    return `release ${version} is named but not unpacked: ${dir} does not exist`;
  }
  const executable = executableOf(layout, version);
  const problem = executableProblem(executable);
  if (problem) return problem;
  // Checked before it is run: a release that is not the one the release keys signed never runs here.
  const refusal = keys ? await releaseRefusal(dir, [EXECUTABLE], keys) : undefined;
  if (refusal) return `release ${version} is refused (${refusal.which}): ${refusal.problem}`;
  const said = await runner.run(executable, ['--version'], { timeoutMs: 30_000 });
  if (said.failure || said.code !== 0) return `${executable} --version failed: ${said.failure?.message ?? `status ${said.code}: ${said.stderr.trim().slice(0, 200)}`}`;
  const words = said.stdout.trim().split(/\s+/);
  if (words[0] !== 'mesh-host' || words[1] !== version) return `${executable} says it is '${said.stdout.trim().slice(0, 120)}', not mesh-host ${version}`;
  return undefined;
}

/** Points `current` at a release in one rename, so that it names the old one or the new one, never none. */
export function moveCurrent(layout: ReleaseLayout, version: string): void {
  const link = join(layout.releasesDir, CURRENT);
  const temporary = `${link}.${process.pid}.tmp`;
  try {
    unlinkSync(temporary);
  } catch {
    // none left over
  }
  symlinkSync(version, temporary);
  renameSync(temporary, link);
  fsyncDirectory(layout.releasesDir);
}

/** The release that failed its trial and is not tried again until the mesh names another. */
export function readFailedTrial(stateDir: string): string | undefined {
  try {
    const value = JSON.parse(readFileSync(join(stateDir, FAILED_TRIAL_FILE), 'utf8')) as { release?: unknown };
    return typeof value.release === 'string' ? value.release : undefined;
  } catch {
    return undefined;
  }
}

export function writeFailedTrial(stateDir: string, release: string | undefined, reason?: string): void {
  const path = join(stateDir, FAILED_TRIAL_FILE);
  if (release === undefined) {
    try {
      unlinkSync(path);
    } catch {
      // none recorded
    }
    return;
  }
  writeDurably(path, Buffer.from(JSON.stringify({ release, reason, at: new Date().toISOString() })), 0o600);
}
