import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { RunResult } from '../../src/core/system/runner.js';
import { dropStaleBuilds, withBuildLock } from './build-lock.js';
import { projectDir } from './cli.js';
import { childOf, containerUnavailable } from './systemd-container.js';

/**
 * A fresh Debian 12 machine of the project's own kind, as a newcomer has it: Debian's minimal system,
 * git and ca-certificates (to clone the project; npm reaches its registry over TLS), this machine's
 * Node.js and npm copied in, the policy-rc.d most container images ship, and the certificate authorities
 * this machine adds for its network (see thisNetwork). Made once by mmdebstrap and kept in the temporary
 * folder under a digest of everything that goes into it; each machine is a throwaway overlay over that
 * tree, so nothing run on one ever changes it.
 */

/** This image's own /usr/sbin/policy-rc.d, copied as it is: it refuses every service start. */
export const IMAGE_POLICY_RC_D = readFileSync(join(projectDir, 'fixtures/newcomer/policy-rc.d'), 'utf8');

/** Debian's mirror, with the suites a Debian 12 machine follows. */
const SOURCES = [
  'deb http://deb.debian.org/debian bookworm main',
  'deb http://deb.debian.org/debian bookworm-updates main',
  'deb http://deb.debian.org/debian-security bookworm-security main',
];
// dpkg without a sync after every file, as this image's dpkg is told (Docker's Debian images say so in
// /etc/dpkg/dpkg.cfg.d/docker-apt-speedup); mmdebstrap keeps the option in the tree it makes.
const MMDEBSTRAP = ['--variant=minbase', '--include=git,ca-certificates', '--dpkgopt=force-unsafe-io', 'bookworm'];
/** Raised when what the tree holds changes in a way the rest of the key does not show. */
const FORMAT = 1;
const PREFIX = 'mesh-host-fresh-bookworm-';

const NODE = process.execPath;
const NPM = join(dirname(NODE), '../lib/node_modules/npm');

/** Why a fresh machine cannot be made here, or undefined when it can. */
export function freshMachineUnavailable(): string | undefined {
  const container = containerUnavailable();
  if (container) return container;
  if (spawnSync('mmdebstrap', ['--version']).error) return 'mmdebstrap is not installed (apt-get install mmdebstrap)';
  if (!existsSync(join(NPM, 'package.json'))) return `npm is not beside this node (looked in ${NPM})`;
  return undefined;
}

/** Where this machine keeps the certificate authorities it adds to Debian's (a proxy that inspects TLS brings one). */
const LOCAL_CAS = '/usr/local/share/ca-certificates';

/**
 * The fresh machine is on this machine's network, and so trusts what this machine trusts for it: the
 * authorities it adds are installed inside as an administrator on that network installs them, and Node.js
 * is told of them as it is here (NODE_EXTRA_CA_CERTS). Without them npm cannot reach its registry through
 * a proxy that inspects TLS. Nothing of the kind is added where this machine adds nothing.
 */
function thisNetwork(): Array<{ name: string; text: string }> {
  const names = existsSync(LOCAL_CAS) ? readdirSync(LOCAL_CAS).filter((name) => name.endsWith('.crt')).sort() : [];
  return names.map((name) => ({ name, text: readFileSync(join(LOCAL_CAS, name), 'utf8') }));
}

/** The tree's path: its name carries a digest of what goes into it, so a change to any of them makes a new one. */
export function freshTreePath(): string {
  const npm = (JSON.parse(readFileSync(join(NPM, 'package.json'), 'utf8')) as { version: string }).version;
  const inputs = { FORMAT, MMDEBSTRAP, SOURCES, node: process.version, npm, policy: IMAGE_POLICY_RC_D, network: thisNetwork() };
  return join(tmpdir(), `${PREFIX}${createHash('sha256').update(JSON.stringify(inputs)).digest('hex').slice(0, 16)}`);
}

/** Makes a fresh tree at `making` (a new folder): mmdebstrap, then Node.js, npm, this image's policy-rc.d and this network's authorities. */
export function makeFreshTree(making: string): void {
  const made = spawnSync('mmdebstrap', [...MMDEBSTRAP, making, ...SOURCES], { encoding: 'utf8', timeout: 900_000 });
  if (made.error) throw new Error(`mmdebstrap could not be run (apt-get install mmdebstrap): ${made.error.message}`);
  if (made.status !== 0) throw new Error(`mmdebstrap could not make a fresh Debian tree (${made.status ?? made.signal}):\n${(made.stderr ?? '').slice(-3000)}`);
  // Node as this machine has it: the binary, npm beside it, and npm's and npx's links as Node's package makes them.
  copyFileSync(NODE, join(making, 'usr/bin/node'));
  chmodSync(join(making, 'usr/bin/node'), 0o755);
  mkdirSync(join(making, 'usr/lib/node_modules'), { recursive: true });
  const copied = spawnSync('cp', ['-a', NPM, join(making, 'usr/lib/node_modules/npm')], { encoding: 'utf8' });
  if (copied.status !== 0) throw new Error(`npm could not be copied into the fresh tree: ${copied.stderr}`);
  symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(making, 'usr/bin/npm'));
  symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(making, 'usr/bin/npx'));
  writeFileSync(join(making, 'usr/sbin/policy-rc.d'), IMAGE_POLICY_RC_D);
  chmodSync(join(making, 'usr/sbin/policy-rc.d'), 0o755);
  const authorities = thisNetwork();
  if (authorities.length > 0) {
    for (const { name, text } of authorities) writeFileSync(join(making, LOCAL_CAS, name), text);
    const updated = spawnSync('chroot', [making, 'update-ca-certificates'], { encoding: 'utf8' });
    if (updated.status !== 0) throw new Error(`the fresh tree could not take this network's certificate authorities: ${updated.stderr}`);
  }
}

/** The tree, made when missing (a few minutes: Debian's packages are fetched). A half-made tree is never kept. */
export function freshDebianTree(): string {
  const tree = freshTreePath();
  const ready = () => {
    if (!existsSync(tree)) return false;
    // Marks it used, so that no other run takes it for a stale one and removes it.
    utimesSync(tree, new Date(), new Date());
    return true;
  };
  if (ready()) return tree;
  return withBuildLock(tree, () => {
    if (ready()) return tree;
    const making = `${tree}.making-${process.pid}`;
    rmSync(making, { recursive: true, force: true });
    try {
      makeFreshTree(making);
    } catch (err) {
      rmSync(making, { recursive: true, force: true });
      throw err;
    }
    renameSync(making, tree);
    dropStaleBuilds(PREFIX, tree);
    return tree;
  });
}

export interface RunInsideOptions {
  timeoutMs?: number;
  /** `HOST:INSIDE` folders or files made visible inside, read-only. */
  readOnlyBinds?: string[];
  /** The same, writable. */
  binds?: string[];
}

export interface FreshMachine {
  /** The machine's root, seen from here: read it after a run to see what the run left. */
  root: string;
  /**
   * Runs a bash script inside as root, with the network shared with this machine (apt and npm reach
   * their registries); not booted: nspawn's own small init is PID 1, as in a container image.
   */
  run(script: string, options?: RunInsideOptions): Promise<RunResult>;
  /** Unmounts the machine and removes everything it wrote. */
  dispose(): void;
}

/** A new machine: an overlay over the cached tree, in its own scratch folder. */
export function freshMachine(): FreshMachine {
  const tree = freshDebianTree();
  const scratch = mkdtempSync(join(tmpdir(), 'mesh-host-fresh-machine-'));
  const root = join(scratch, 'root');
  for (const dir of ['upper', 'work', 'root']) mkdirSync(join(scratch, dir));
  const mounted = spawnSync('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${tree},upperdir=${scratch}/upper,workdir=${scratch}/work`, root], { encoding: 'utf8' });
  if (mounted.status !== 0) {
    rmSync(scratch, { recursive: true, force: true });
    throw new Error(`the fresh machine's overlay could not be mounted: ${mounted.stderr}`);
  }
  let runs = 0;
  return {
    root,
    run: (script, options = {}) => {
      const io = join(scratch, `io-${++runs}`);
      mkdirSync(io);
      return nspawn(root, `mhfresh-${process.pid}-${runs}`, io, script, options);
    },
    dispose: () => {
      if (spawnSync('umount', [root]).status !== 0) spawnSync('umount', ['-l', root]);
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}

/** Node.js inside is told of this machine's added authorities as it is here (see thisNetwork). */
const networkEnvironment = (): string[] => (process.env.NODE_EXTRA_CA_CERTS ? [`--setenv=NODE_EXTRA_CA_CERTS=${process.env.NODE_EXTRA_CA_CERTS}`] : []);

/**
 * The script run to its end under systemd-nspawn. Its output goes to files in `io` (bound inside), apart
 * from nspawn's own words; past the bound, the container's init is killed, and with it all it ran.
 */
function nspawn(root: string, name: string, io: string, script: string, options: RunInsideOptions): Promise<RunResult> {
  const args = [
    '--quiet', '-D', root, '-M', name, '--register=no', '--keep-unit', '--console=pipe', '--as-pid2', ...networkEnvironment(),
    `--bind=${io}:/run/mesh-host-io`,
    ...(options.readOnlyBinds ?? []).map((bind) => `--bind-ro=${bind}`),
    ...(options.binds ?? []).map((bind) => `--bind=${bind}`),
    '/bin/bash', '-c', `exec >/run/mesh-host-io/stdout 2>/run/mesh-host-io/stderr\n${script}`,
  ];
  const timeoutMs = options.timeoutMs ?? 60_000;
  return new Promise((resolve) => {
    const child = spawn('systemd-nspawn', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let said = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (said += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (said += d));
    const timer = setTimeout(() => {
      timedOut = true;
      const init = child.pid === undefined ? undefined : childOf(child.pid);
      try {
        if (init !== undefined) process.kill(init, 'SIGKILL');
      } catch {
        // Ended on its own meanwhile.
      }
      child.kill('SIGKILL');
    }, timeoutMs);
    const output = () => {
      const read = (file: string) => (existsSync(join(io, file)) ? readFileSync(join(io, file), 'utf8') : '');
      return { stdout: read('stdout'), stderr: read('stderr') };
    };
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, ...output(), failure: { kind: 'spawn', message: `systemd-nspawn could not be started: ${err.message}` } });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (timedOut) resolve({ code: null, ...output(), failure: { kind: 'timeout', message: `the script inside did not end within ${timeoutMs} ms and was cut off` } });
      // The script never ran: nspawn says why.
      else if (!existsSync(join(io, 'stdout'))) resolve({ code, stdout: '', stderr: '', failure: { kind: 'spawn', message: `systemd-nspawn did not run the script (${code}): ${said}` } });
      else resolve({ code, ...output() });
    });
  });
}
