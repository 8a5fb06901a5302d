import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { CommandRunner, RunResult } from '../../core/system/runner.js';
import { compareVersions } from './debian-version-spec.js';
import type { Installed, Operation, PackageManager, Simulated, Simulation } from './package-manager.js';
import { withServicesHeld } from './service-policy.js';

/** The environment the tools run in: no prompt, no pager, no listchanges mail, messages as apt's parsers expect them. */
const ENV = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  LC_ALL: 'C',
  DEBIAN_FRONTEND: 'noninteractive',
  APT_LISTCHANGES_FRONTEND: 'none',
};

/**
 * apt-get's options for the transaction: yes to everything it may do without a question of its own,
 * the configuration files the machine has kept as they are (a declared file is the file resource's),
 * a version declared lower than the one installed taken as meant, and another apt (an unattended
 * upgrade) waited for rather than failed on. A held package (`apt-mark hold`) is never changed: apt
 * refuses the transaction, and the step fails with its words.
 */
const INSTALL = ['-y', '-q', '-o', 'Dpkg::Options::=--force-confold', '-o', 'Dpkg::Options::=--force-confdef', '-o', 'DPkg::Lock::Timeout=120', '--allow-downgrades', '--no-install-recommends'];

const TRANSACTION_TIMEOUT_MS = 30 * 60_000;
const QUERY_TIMEOUT_MS = 120_000;

/** What a tool said when it failed, for a step's problem: its reasons and errors when it said some, else its last lines. */
function saidBy(result: RunResult): string {
  if (result.failure) return result.failure.message;
  const lines = `${result.stdout}\n${result.stderr}`.split('\n').map((l) => l.trim()).filter((l) => l && !/^(Reading|Building|WARNING: apt does not)/.test(l));
  // apt's reasons: each unmet dependency (`app : Depends: lib but it is not installable`), dpkg's own
  // errors (`dpkg: error processing archive …`, `dpkg: unrecoverable fatal error`, and the line after each
  // that says why), then apt's errors.
  const errors = lines.filter((l, i) => l.startsWith('E: ') || /^dpkg: (error|unrecoverable)/.test(l) || /^dpkg: (error|unrecoverable)/.test(lines[i - 1] ?? '') || /^\S+ : (Pre-Depends|Depends|Conflicts|Breaks):/.test(l));
  return (errors.length > 0 ? errors : lines.slice(-4)).join('; ');
}

const argOf = (op: Operation) => ('remove' in op ? `${op.name}-` : op.version === undefined ? op.name : `${op.name}=${op.version}`);

/** Is dpkg this root's package database (its status file, and apt-get beside it)? */
export async function aptUnder(root: string): Promise<boolean> {
  try {
    await access(join(root, 'var/lib/dpkg/status'));
    await access(join(root, 'usr/bin/apt-get'));
    return true;
  } catch {
    return false;
  }
}

/** dpkg's abbreviated status: desired, state, error (`ii `, `iU `, `rc `, `hi `). */
export function stateOf(status: string): Installed['state'] {
  const state = status[1];
  if (state === 'n' || state === 'c' || state === undefined) return 'absent';
  if ((state === 'i' || state === 'W' || state === 't') && status[2] !== 'R') return 'installed';
  return 'broken';
}

/** `Inst name [old] (new …)` and `Remv name [old]`: the simulation's own lines, one a package. */
export function readSimulation(stdout: string): Simulated[] {
  const actions: Simulated[] = [];
  for (const line of stdout.split('\n')) {
    const inst = /^Inst (\S+) (?:\[(\S+)\] )?\((\S+)/.exec(line);
    if (inst) {
      const [, name, from, to] = inst;
      const action = from === undefined ? 'install' : compareVersions(to!, from) < 0 ? 'downgrade' : 'upgrade';
      actions.push({ name: name!, action, ...(from !== undefined ? { from } : {}), to: to! });
      continue;
    }
    const remv = /^Remv (\S+)(?: \[(\S+)\])?/.exec(line);
    if (remv) actions.push({ name: remv[1]!, action: 'remove', ...(remv[2] !== undefined ? { from: remv[2] } : {}) });
  }
  return actions;
}

/**
 * Debian's dpkg and apt. Under a root other than `/` (a machine's tree seen from outside), apt and dpkg
 * are the root's own, run inside it (chroot): the packages, their scripts and their database are that
 * tree's, never this machine's.
 */
export function aptManager(runner: CommandRunner, root: string): PackageManager {
  const inRoot = (command: string, args: string[]): [string, string[]] => (root === '/' ? [command, args] : ['chroot', [root, command, ...args]]);
  const run = (command: string, args: string[], timeoutMs = QUERY_TIMEOUT_MS) => {
    const [cmd, all] = inRoot(command, args);
    return runner.run(cmd, all, { env: ENV, timeoutMs });
  };
  return {
    name: 'dpkg/apt',
    tool: 'apt-get',
    async describe() {
      const result = await run('dpkg-query', ['-W', '-f', '${Package} ${Version}\\n', '--', 'dpkg', 'apt']);
      const said = result.stdout.split('\n').map((l) => l.trim()).filter(Boolean);
      return said.length > 0 ? said.join(', ') : `dpkg-query did not say which dpkg and apt are installed: ${saidBy(result)}`;
    },
    async installed(names) {
      const found = new Map<string, Installed>();
      if (names.length === 0) return found;
      // One query for every name; a name dpkg never heard of is said on stderr (exit 1) and is absent.
      const result = await run('dpkg-query', ['-W', '-f', '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n', '--', ...names]);
      if (result.code === null || result.code > 1) throw new Error(`dpkg-query could not read the package database: ${saidBy(result)}`);
      for (const line of result.stdout.split('\n')) {
        const [name, version, status] = line.split('\t');
        if (!name || status === undefined) continue;
        found.set(name, { version: version ?? '', status: status.trim(), state: stateOf(status) });
      }
      return found;
    },
    async offered(names) {
      const offered = new Map<string, string[]>();
      if (names.length === 0) return offered;
      const result = await run('apt-cache', ['madison', '--', ...names]);
      if (result.code !== 0) throw new Error(`apt-cache could not read the repositories' lists: ${saidBy(result)}`);
      for (const line of result.stdout.split('\n')) {
        const [name, version] = line.split('|').map((s) => s.trim());
        if (!name || !version) continue;
        const versions = offered.get(name) ?? [];
        if (!versions.includes(version)) versions.push(version);
        offered.set(name, versions);
      }
      return offered;
    },
    async simulate(operations): Promise<Simulation> {
      // No lock: a plan may be made while another apt runs, and changes nothing.
      const result = await run('apt-get', ['-s', '-o', 'Debug::NoLocking=1', ...INSTALL, 'install', '--', ...operations.map(argOf)]);
      if (result.code !== 0) return { ok: false, said: saidBy(result) };
      return { ok: true, actions: readSimulation(result.stdout) };
    },
    async transact(operations) {
      const result = await withServicesHeld(root, () => run('apt-get', [...INSTALL, 'install', '--', ...operations.map(argOf)], TRANSACTION_TIMEOUT_MS));
      return result.code === 0 ? undefined : `apt-get install ${operations.map(argOf).join(' ')} failed (${result.code === null ? 'cut off' : `exit ${result.code}`}): ${saidBy(result)}`;
    },
  };
}
