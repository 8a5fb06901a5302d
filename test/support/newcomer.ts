import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunResult } from '../../src/core/system/runner.js';
import { freshMachine, type FreshMachine } from './fresh-debian.js';
import { projectDir } from './cli.js';
import { tryOutputProblems } from './try-output.js';

/** A bound that only ends a run that hangs: a fresh machine installs every package the suite needs. */
export const NEWCOMER_TIMEOUT_MS = 20 * 60_000;

export const POLICY_RC_D = 'usr/sbin/policy-rc.d';

/** A file's bytes, mode and owner as a machine has it, or undefined when it has none. */
export interface FileState {
  text: string;
  mode: string;
  owner: string;
}

export function fileState(root: string, path: string): FileState | undefined {
  const full = join(root, path);
  if (!existsSync(full)) return undefined;
  const stat = lstatSync(full);
  return { text: readFileSync(full, 'utf8'), mode: stat.mode.toString(8), owner: `${stat.uid}:${stat.gid}` };
}

function git(args: string[]): string {
  const run = spawnSync('git', ['-C', projectDir, ...args], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${run.stderr}`);
  return run.stdout.trim();
}

/**
 * A fresh clone of the commit under test (this checkout's HEAD), made inside the machine with its own
 * git, as a newcomer makes one; returns the clone's path inside. Uncommitted changes are not in it.
 */
export async function cloneUnderTest(machine: FreshMachine): Promise<string> {
  // The repository's own folder: a worktree's .git is only a pointer into it.
  const repository = git(['rev-parse', '--path-format=absolute', '--git-common-dir']);
  const head = git(['rev-parse', 'HEAD']);
  const checkout = '/root/mesh-host';
  const cloned = await machine.run(`git clone --quiet --no-checkout /mnt/mesh-host.git ${checkout} && git -C ${checkout} checkout --quiet --detach ${head}`, {
    readOnlyBinds: [`${repository}:/mnt/mesh-host.git`],
  });
  if (cloned.code !== 0) throw new Error(`the commit under test could not be cloned inside the fresh machine: ${cloned.failure?.message ?? cloned.stderr}`);
  return checkout;
}

export interface NewcomerRun {
  /** What `bash scripts/try.sh` did. */
  run: RunResult;
  /** What is wrong with what it printed, against the clone's README (empty when nothing is). */
  problems: string[];
  /** The machine's policy-rc.d before and after. */
  policy: { before: FileState | undefined; after: FileState | undefined };
  /** The Debian packages installed on the machine when try.sh ended (dpkg's own record). */
  packages: string[];
  /** Wall milliseconds: the machine and the clone, then try.sh. */
  ms: { clone: number; tryScript: number };
}

/** The packages dpkg records as installed under `root`. */
export function installedPackages(root: string): string[] {
  return readFileSync(join(root, 'var/lib/dpkg/status'), 'utf8')
    .split('\n\n')
    .filter((stanza) => /^Status: install ok installed$/m.test(stanza))
    .map((stanza) => /^Package: (\S+)$/m.exec(stanza)?.[1])
    .filter((name): name is string => name !== undefined)
    .sort();
}

/**
 * README's first command as a newcomer runs it: a fresh machine, a fresh clone of the commit under test,
 * `bash scripts/try.sh` in it (which installs everything itself from Debian's and npm's registries).
 */
export async function newcomerRun(): Promise<NewcomerRun> {
  const start = performance.now();
  const machine = freshMachine();
  try {
    const before = fileState(machine.root, POLICY_RC_D);
    const checkout = await cloneUnderTest(machine);
    const cloned = performance.now();
    const run = await machine.run(`cd ${checkout} && bash scripts/try.sh`, { timeoutMs: NEWCOMER_TIMEOUT_MS });
    const ms = { clone: cloned - start, tryScript: performance.now() - cloned };
    // The README the newcomer reads: the clone's own.
    const problems = tryOutputProblems(run.stdout, readFileSync(join(machine.root, checkout, 'README.md'), 'utf8'));
    return { run, problems, policy: { before, after: fileState(machine.root, POLICY_RC_D) }, packages: installedPackages(machine.root), ms };
  } finally {
    machine.dispose();
  }
}
