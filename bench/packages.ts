import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { HostEnv } from '../src/engine/apply/apply.js';
import { hostHandlers } from '../src/host/env/host-environment.js';
import type { Resource } from '../src/core/declaration/schema.js';
import { systemAccounts } from '../src/engine/converge/unix-accounts.js';
import { Store } from '../src/core/store/store.js';
import { systemClock } from '../src/core/system/clock.js';
import { systemRunner, type CommandRunner } from '../src/core/system/runner.js';
import { packageRoot, type TestPackage } from '../test/support/package-repo.js';
import { freshMachineUnavailable } from '../test/support/fresh-debian.js';
import { localApplier } from './local-apply.js';
import { fmt, median, percentile, timeIt } from './stats.js';

const COUNT = 50;
const RUNS = 15;

/** The tools run, by name: in a root, `chroot ROOT TOOL …` counts as TOOL. */
function counting(runner: CommandRunner) {
  const counts = new Map<string, number>();
  const count = (name: string) => counts.set(name, (counts.get(name) ?? 0) + 1);
  return {
    counts,
    reset: () => counts.clear(),
    runner: { run: (command, args, options) => (count(command === 'chroot' ? args[1]! : command), runner.run(command, args, options)) } as CommandRunner,
  };
}

/**
 * Packages in a Debian root (the package tests' own: mmdebstrap's tree under an overlay, a local
 * repository of packages built with dpkg-deb), through its own apt and dpkg run in it (chroot).
 */
export async function benchPackages(): Promise<string[]> {
  const title = `## Packages: the no-op of ${COUNT} declared packages`;
  const unavailable = freshMachineUnavailable();
  if (unavailable) return [title, '', `Not measured: ${unavailable}.`];
  const names = Array.from({ length: COUNT }, (_, i) => `mhbench${String(i).padStart(2, '0')}`);
  const machine = packageRoot(names.map((name): TestPackage => ({ name, version: '1.0-1' })));
  const dir = mkdtempSync(join(tmpdir(), 'mesh-host-bench-packages-'));
  try {
    const count = counting(systemRunner());
    const log = pino({ level: 'silent' });
    const env: HostEnv = {
      node: 'bench', root: machine.root, stateDir: join(dir, 'state'), store: Store.open(join(dir, 'state'), log), log, clock: systemClock,
      accounts: systemAccounts(),
      handlers: hostHandlers({ node: 'bench', stateDir: join(dir, 'state'), clock: systemClock, runner: count.runner }),
    };
    const apply = localApplier(env);
    const declared: Resource[] = names.map((name) => ({ type: 'package', id: name, name, version: '1.0-1' }) as Resource);
    const install = await timeIt(() => apply(declared));
    const runs: Array<{ total: number; processes: string }> = [];
    for (let i = 0; i < RUNS; i++) {
      count.reset();
      let report!: Awaited<ReturnType<typeof apply>>;
      const total = await timeIt(async () => (report = await apply(declared)));
      if (report.steps.some((s) => s.status !== 'unchanged')) throw new Error(`the no-op changed something: ${JSON.stringify(report.steps.filter((s) => s.status !== 'unchanged'))}`);
      runs.push({ total, processes: [...count.counts].map(([tool, n]) => `${n} \`${tool}\``).join(', ') || 'none' });
    }
    const processes = [...new Set(runs.map((r) => r.processes))].join(' / ');
    return [
      title,
      '',
      `A Debian 12 root (mmdebstrap's, under an overlay) with ${COUNT} packages of a local repository installed by the host; each apply declares the same ${COUNT} at their pinned versions, in-process, as \`mesh-host apply\` runs it. dpkg and apt are the root's own, run in it with \`chroot\`. Command: \`npm run bench -- packages\`.`,
      '',
      '| apply | whole apply | processes run |',
      '| --- | ---: | --- |',
      `| installs the ${COUNT} (one \`apt-get install\`, read back once), once | ${fmt(install)} ms | — |`,
      `| no-op over the ${COUNT}, median of ${RUNS} (p90) | ${fmt(median(runs.map((r) => r.total)))} ms (${fmt(percentile(runs.map((r) => r.total), 90))} ms) | ${processes} (one query of the package database; the repositories and apt are not asked) |`,
    ];
  } finally {
    machine.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}
