import { join } from 'node:path';
import { enrolledHost } from '../test/support/daemon.js';
import { projectDir } from '../test/support/cli.js';
import { NatsServer, natsUnavailable } from '../test/support/nats.js';
import { containerUnavailable, startSystemdContainer } from '../test/support/systemd-container.js';
import { loadAverage } from './stats.js';

const SECONDS = 60;
const TICKS = 100; // USER_HZ
const UNIT = 'mesh-host-bench';

/**
 * The daemon idle with its watchers, as shipped: a real `mesh-host run` inside a real systemd (the nspawn
 * container, on this machine's loopback where a real nats-server is), converged to 1,000 files in 20
 * folders and 20 running services, then left alone for 60 s. Its CPU (and that of the `systemctl` it runs,
 * reaped children) and its RSS every 10 s are read from /proc inside the container.
 */
export async function benchWatchDaemon(): Promise<string[]> {
  const unavailable = containerUnavailable() ?? natsUnavailable();
  const heading = '## The daemon idle with its watchers (1,000 files, 20 units, a real systemd, 60 s)';
  if (unavailable) return [heading, '', `Not measured: ${unavailable}.`];
  const server = await NatsServer.start();
  const h = await enrolledHost([server.url]).catch(async (err: Error) => {
    await server.stop();
    throw err;
  });
  const container = await startSystemdContainer({ binds: [projectDir.replace(/\/$/, ''), h.dir] }).catch(async (err: Error) => {
    await h.cleanup();
    await server.stop();
    throw err;
  });
  const inside = async (command: string, args: string[]) => {
    const r = await container.exec(command, args, 120_000);
    if (r.code !== 0) throw new Error(`${command} ${args.join(' ')}: exit ${r.code}: ${r.stderr}`);
    return r.stdout.trim();
  };
  try {
    const units = Array.from({ length: 20 }, (_, i) => `watched${i}.service`);
    await inside('sh', ['-c', `${units.map((u) => `printf '[Service]\\nExecStart=/bin/sleep 100000\\n' > /etc/systemd/system/${u}`).join('; ')}; systemctl daemon-reload`]);
    await inside('systemd-run', [`--unit=${UNIT}`, '--collect', process.execPath, join(projectDir, 'bin/mesh-host'), 'run', ...h.flags, '--log-level', 'info']);
    const resources = [
      ...Array.from({ length: 20 }, (_, d) => [
        { type: 'directory', id: `d${d}`, path: `/srv/d${d}` },
        ...Array.from({ length: 50 }, (_, f) => ({ type: 'file', id: `d${d}f${f}`, path: `/srv/d${d}/f${f}.conf`, content: `value = ${f}\n` })),
      ]).flat(),
      ...units.map((unit, i) => ({ type: 'service', id: `s${i}`, unit, state: 'running' })),
    ];
    await h.put({ epoch: 1, sequence: 2, resources });
    const applied = await h.waitForReport('of the 1,000 files and 20 units', (r) => r.declaration?.sequence === 2, 600_000);
    if (applied.outcome !== 'converged') throw new Error(`the apply did not converge: ${JSON.stringify(applied.error)}`);
    const pid = await inside('systemctl', ['show', '-p', 'MainPID', '--value', UNIT]);
    const stat = async () => {
      const text = await inside('cat', [`/proc/${pid}/stat`]);
      const f = text.slice(text.lastIndexOf(')') + 2).split(' ').map(Number);
      return { self: ((f[11]! + f[12]!) * 1000) / TICKS, children: ((f[13]! + f[14]!) * 1000) / TICKS, rssMb: (f[21]! * 4096) / 1048576 };
    };
    const reportsBefore = (await h.reports()).length;
    // Settled: the watchers' first look after the apply is taken.
    await new Promise((r) => setTimeout(r, 5_000));
    const load = loadAverage();
    const start = await stat();
    const rss: number[] = [start.rssMb];
    for (let s = 0; s < SECONDS; s += 10) {
      await new Promise((r) => setTimeout(r, 10_000));
      rss.push((await stat()).rssMb);
    }
    const end = await stat();
    const reportsAfter = (await h.reports()).length;
    if (reportsAfter !== reportsBefore) throw new Error(`the idle daemon reported ${reportsAfter - reportsBefore} times: something was found`);
    const self = end.self - start.self;
    const children = end.children - start.children;
    const pct = (ms: number) => `${((ms / (SECONDS * 1000)) * 100).toFixed(2)}%`;
    return [
      heading,
      '',
      'A real `mesh-host run` inside the systemd container (its reconcile timer an hour away, so only the watchers,',
      'the heartbeat and the link are at work), converged to 1,000 files in 20 folders and 20 running units, then',
      `left alone for ${SECONDS} s; CPU and RSS read from its /proc entry. Load average at the start: ${load} (2 cores).`,
      '',
      '| figure | value | target |',
      '| --- | ---: | ---: |',
      `| CPU of the daemon | ${self.toFixed(0)} ms (${pct(self)} of a core) | — |`,
      `| CPU of the processes it ran (full looks: \`systemctl show\`) | ${children.toFixed(0)} ms (${pct(children)} of a core) | — |`,
      `| together | ${(self + children).toFixed(0)} ms (${pct(self + children)} of a core) | under 1% of a core |`,
      `| RSS at the start, then every 10 s | ${rss.map((r) => r.toFixed(0)).join(' / ')} MB | flat |`,
      `| reports during the idle minute | ${reportsAfter - reportsBefore} | 0 |`,
    ];
  } finally {
    await container.stop();
    await h.cleanup();
    await server.stop();
  }
}
