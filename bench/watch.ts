import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { systemdManager } from '../src/machine/services/systemd.js';
import { silentLogger } from '../src/core/system/log.js';
import { watchFootprint } from '../src/host/watch/footprint.js';
import { unitProbe } from '../src/kinds/service/unit-probe.js';
import { watchUnits } from '../src/kinds/service/unit-watch.js';
import { containerUnavailable } from '../test/support/systemd-container.js';
import { withSleepers } from './sleepers.js';

const SECONDS = 60;
const TICKS = 100; // USER_HZ

/** CPU of this process and of its children it has reaped (the `systemctl` and `nsenter` of each look), in ms. */
function cpuMs(): { self: number; children: number } {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  return { self: ((f[11]! + f[12]!) * 1000) / TICKS, children: ((f[13]! + f[14]!) * 1000) / TICKS };
}

const rssMb = () => process.memoryUsage().rss / 1048576;
const pct = (ms: number) => `${((ms / (SECONDS * 1000)) * 100).toFixed(2)}%`;

/**
 * The watchers' idle cost: 1,000 owned files in 20 folders watched through inotify and 20 units looked at
 * every 2 s on a real systemd, for 60 s with nothing changing; and beside it, what subscribing to systemd's
 * D-Bus signals costs idle (a `busctl monitor` of systemd's signals for the same 60 s).
 */
export async function benchWatch(): Promise<string[]> {
  const unavailable = containerUnavailable();
  if (unavailable) return ['## Watchers between applies', '', `Not measured: ${unavailable}.`];
  return withSleepers('watched', 20, { start: true }, async ({ container, units, dir }) => {
    const owned: Array<{ target: string; type: 'file' | 'directory' }> = [];
    for (let d = 0; d < 20; d++) {
      mkdirSync(join(dir, `srv/d${d}`), { recursive: true });
      owned.push({ target: `/srv/d${d}`, type: 'directory' });
      for (let f = 0; f < 50; f++) {
        writeFileSync(join(dir, `srv/d${d}/f${f}.conf`), `value = ${f}\n`);
        owned.push({ target: `/srv/d${d}/f${f}.conf`, type: 'file' });
      }
    }

    let looks = 0;
    let found = 0;
    const manager = systemdManager(container.runner);
    let fullLooks = 0;
    const probe = unitProbe({ ...manager, query: (u) => (fullLooks++, manager.query(u)) }, `/proc/${container.initPid}/root`);
    const rss0 = rssMb();
    const cpu0 = cpuMs();
    const footprint = watchFootprint({ owned, root: dir, onFound: (f) => (found += f.length), log: silentLogger() });
    const unitWatch = watchUnits({ units, probe: (u) => (looks++, probe(u)), onFound: (f) => (found += f.length), log: silentLogger() });
    const rssSamples: number[] = [];
    for (let s = 0; s < SECONDS; s += 10) {
      await new Promise((r) => setTimeout(r, 10_000));
      rssSamples.push(rssMb());
    }
    footprint.close();
    unitWatch.close();
    const cpu1 = cpuMs();
    const self = cpu1.self - cpu0.self;
    const children = cpu1.children - cpu0.children;
    if (found !== 0) throw new Error(`the idle watchers found ${found} changes`);

    // D-Bus: a client subscribed to systemd's signals, idle for the same time (its own CPU, inside the container).
    const dbus = await container.exec('sh', ['-c', `/usr/bin/time -f '%U %S' sh -c 'timeout ${SECONDS} busctl --system monitor org.freedesktop.systemd1 >/dev/null 2>&1; true'`], (SECONDS + 30) * 1000);
    const [user, system] = dbus.stderr.trim().split('\n').pop()!.split(' ').map(Number);
    const dbusMs = ((user ?? NaN) + (system ?? NaN)) * 1000;

    return [
      '## Watchers between applies (1,000 owned files, 20 units on a real systemd, 60 s idle)',
      '',
      'The footprint watcher (inotify on the 20 folders that hold the files) and the unit watcher in one process for',
      '60 s with nothing changing. The unit watcher looks every 2 s at systemd\'s invocation links',
      '(`/run/systemd/units/invocation:UNIT`, no process) and asks `systemctl show` for all 20 units in one call only',
      'when a link changed, and once a minute besides. Those full looks run through `nsenter` into the container,',
      'which a host does not pay; their processes are counted all the same.',
      '',
      '| figure | value | target |',
      '| --- | ---: | ---: |',
      `| CPU of the watching process | ${self.toFixed(0)} ms (${pct(self)} of a core) | — |`,
      `| CPU of the full looks' processes (${fullLooks} of ${looks} looks: \`nsenter\` + \`systemctl show\`) | ${children.toFixed(0)} ms (${pct(children)} of a core) | — |`,
      `| together | ${(self + children).toFixed(0)} ms (${pct(self + children)} of a core) | under 1% of a core |`,
      `| one full look (its processes) | ${(children / Math.max(1, fullLooks)).toFixed(1)} ms, every 2 s it would be ${pct((children / Math.max(1, fullLooks)) * (SECONDS / 2))} of a core | — |`,
      `| RSS at start, then every 10 s | ${rss0.toFixed(0)} → ${rssSamples.map((r) => r.toFixed(0)).join(' / ')} MB | flat |`,
      `| D-Bus instead: \`busctl monitor\` of systemd's signals, idle, its own CPU | ${Number.isFinite(dbusMs) ? `${dbusMs.toFixed(0)} ms` : 'not measured'} | — |`,
      '',
      'Chosen: the links, then one batched `systemctl show`. A `systemctl show` every 2 s alone costs the figure',
      'above (over the 1% target on this machine). Subscribing to D-Bus costs nothing while idle, but the host would',
      'need a bus client library (the Node ones are unmaintained) or a long-lived helper process, systemd sends unit',
      'signals only to clients that subscribed, a restart of the bus loses them silently (a look would still be',
      'needed to catch what was missed), and OpenRC has none. The links cost no process, notice a unit that left',
      'running within one interval (2 s), and the verdict is still what `systemctl show` says.',
    ];
  });
}
