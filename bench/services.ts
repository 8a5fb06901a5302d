import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import type { HostEnv } from '../src/engine/apply/apply.js';
import { hostHandlers } from '../src/host/env/host-environment.js';
import type { Resource } from '../src/core/declaration/schema.js';
import { systemAccounts } from '../src/engine/converge/unix-accounts.js';
import { systemdManager } from '../src/machine/services/systemd.js';
import { Store } from '../src/core/store/store.js';
import { systemClock } from '../src/core/system/clock.js';
import type { CommandRunner } from '../src/core/system/runner.js';
import { containerUnavailable } from '../test/support/systemd-container.js';
import { withSleepers } from './sleepers.js';
import { localApplier } from './local-apply.js';
import { fmt, median, timeIt } from './stats.js';

function counting(runner: CommandRunner) {
  const counts = new Map<string, number>();
  return {
    counts,
    reset: () => counts.clear(),
    runner: { run: (command, args, options) => (counts.set(command, (counts.get(command) ?? 0) + 1), runner.run(command, args, options)) } as CommandRunner,
  };
}

/**
 * On a real systemd in a container: services are managed there, their config files are written in a
 * scratch root here (a file change is what restarts a unit); systemctl runs through nsenter.
 */
export async function benchServices(): Promise<string[]> {
  const unavailable = containerUnavailable();
  if (unavailable) return ['## Services on a real systemd', '', `Not measured: ${unavailable}.`];
  return withSleepers('bench', 50, { start: false }, async ({ container, units, dir }) => {
    const count = counting(container.runner);
    const root = join(dir, 'root');
    mkdirSync(join(root, 'etc'), { recursive: true });
    const log = pino({ level: 'silent' });
    const env: HostEnv = {
      node: 'bench', root, stateDir: join(dir, 'state'), store: Store.open(join(dir, 'state'), log), log, clock: systemClock,
      accounts: systemAccounts(),
      handlers: hostHandlers({ node: 'bench', stateDir: join(dir, 'state'), clock: systemClock, verifyPauseMs: 1500, serviceManager: async () => ({ manager: systemdManager(count.runner), reason: 'bench' }) }),
    };
    const apply = localApplier(env);
    const twenty = (content: string): Resource[] => [
      ...units.slice(0, 20).map((u, i): Resource => ({ type: 'file', id: `conf${i}`, path: `/etc/bench${i}.conf`, content })),
      ...units.slice(0, 20).map((u, i): Resource => ({ type: 'service', id: `svc${i}`, unit: u, state: 'running', restartOn: [`conf${i}`] })),
    ];
    await apply(twenty('v0'));
    const restartRuns: Array<{ total: number; verify: number; pause: number; systemctl: number }> = [];
    for (let i = 1; i <= 3; i++) {
      count.reset();
      let report!: Awaited<ReturnType<typeof apply>>;
      const total = await timeIt(async () => (report = await apply(twenty(`v${i}`))));
      const said = report.said.find((s) => s.startsWith('second look'))!;
      const [, pause, took] = /after a pause of (\d+) ms \(verifying took (\d+) ms\)/.exec(said)!;
      restartRuns.push({ total, verify: Number(took), pause: Number(pause), systemctl: count.counts.get('systemctl') ?? 0 });
    }
    const fifty: Resource[] = units.map((u, i) => ({ type: 'service', id: `svc${i}`, unit: u, state: 'running' }));
    await apply(fifty);
    const noopRuns: Array<{ total: number; systemctl: number }> = [];
    for (let i = 0; i < 5; i++) {
      count.reset();
      const total = await timeIt(() => apply(fifty));
      noopRuns.push({ total, systemctl: count.counts.get('systemctl') ?? 0 });
    }
    const r = restartRuns;
    return [
      '## Services on a real systemd',
      '',
      'systemd booted with systemd-nspawn; every `systemctl` runs through `nsenter`, so each call also pays for entering the container.',
      '',
      '| apply | whole apply | verifying (the shared pause and the second look) | pause | `systemctl` processes |',
      '| --- | ---: | ---: | ---: | ---: |',
      `| restarts 20 services (a restartOn file of each changed), median of ${r.length} | ${fmt(median(r.map((x) => x.total)))} ms | ${fmt(median(r.map((x) => x.verify)))} ms | ${fmt(median(r.map((x) => x.pause)))} ms (one, not twenty) | ${median(r.map((x) => x.systemctl))} (1 batched read, 20 restarts, 20 first looks, 1 batched second look) |`,
      `| no-op over 50 declared services, median of ${noopRuns.length} | ${fmt(median(noopRuns.map((x) => x.total)))} ms | — (nothing acted on: no pause) | 0 | ${median(noopRuns.map((x) => x.systemctl))} (one batched \`systemctl show\`) |`,
    ];
  });
}
