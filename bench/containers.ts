import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import type { HostEnv } from '../src/engine/apply/apply.js';
import type { ContainerResource } from '../src/core/declaration/schema.js';
import { hostHandlers } from '../src/host/env/host-environment.js';
import { systemAccounts } from '../src/engine/converge/unix-accounts.js';
import { Store } from '../src/core/store/store.js';
import { systemClock } from '../src/core/system/clock.js';
import { dockerEngine } from '../src/kinds/container/engine.js';
import { podmanUnavailable, startPodman } from '../test/support/podman.js';
import { localApplier } from './local-apply.js';
import { fmt, loadAverage, median, timeIt } from './stats.js';

const RUNS = 7;
const PAUSE_MS = 1500;
/** A process that ends on SIGTERM (busybox as PID 1 would ignore it and wait for the kill). */
const COMMAND = ['sh', '-c', 'trap "exit 0" TERM; sleep 100000 & wait'];

/**
 * Containers on podman's API service (in the suite's systemd container): the no-op of 20 declared
 * containers in-process, and one replacement against the same done by hand with podman's own commands.
 */
export async function benchContainers(): Promise<string[]> {
  const title = '## Containers on podman';
  const unavailable = podmanUnavailable();
  if (unavailable) return [title, '', `Not measured: ${unavailable}.`];
  const before = loadAverage();
  const podman = await startPodman();
  const dir = mkdtempSync('/tmp/mesh-bench-containers-');
  try {
    const ref = await podman.pushImage('bench');
    const stateDir = join(dir, 'state');
    mkdirSync(join(dir, 'root'), { recursive: true });
    const log = pino({ level: 'silent' });
    const env: HostEnv = {
      node: 'bench', root: join(dir, 'root'), stateDir, store: Store.open(stateDir, log), log, clock: systemClock, accounts: systemAccounts(),
      handlers: hostHandlers({ node: 'bench', stateDir, clock: systemClock, verifyPauseMs: PAUSE_MS, containerSocket: podman.socket }),
    };
    const apply = localApplier(env);
    const twenty = (v: string): ContainerResource[] =>
      Array.from({ length: 20 }, (_, i) => ({ type: 'container', id: `c${i}`, name: `c${i}`, image: { ref }, command: COMMAND, env: { V: i === 0 ? v : '0' }, state: 'running' }));
    const first = await timeIt(() => apply(twenty('0')));
    const noop: number[] = [];
    const listing: number[] = [];
    const engine = await dockerEngine(podman.socket);
    for (let i = 0; i < RUNS; i++) {
      noop.push(await timeIt(() => apply(twenty('0'))));
      listing.push(await timeIt(() => engine.list(['mesh-host.node=bench'])));
    }

    const mesh: number[] = [];
    const hand: number[] = [];
    const name = 'byhand';
    await podman.podman(['pull', ref]);
    for (let i = 1; i <= RUNS; i++) {
      mesh.push(await timeIt(() => apply(twenty(String(i)))));
      if (i === 1) await podman.podman(['run', '-d', '--name', name, ref, ...COMMAND]);
      hand.push(await timeIt(() => podman.container.exec('sh', ['-c', `podman stop -t 10 ${name} >/dev/null && podman rm ${name} >/dev/null && podman run -d --name ${name} -e V=${i} ${ref} ${COMMAND.map((w) => `'${w}'`).join(' ')} >/dev/null`])));
    }
    const work = median(mesh) - PAUSE_MS;
    return [
      title,
      '',
      `Podman 4.3.1's Docker-compatible API (v1.40) in a systemd container, busybox images from a registry on its loopback; ${RUNS} runs each, the replacement interleaved with the one by hand. Load ${before} before, ${loadAverage()} after.`,
      '',
      '| what | mesh-host | by hand | ratio | target |',
      '| --- | ---: | ---: | ---: | --- |',
      `| first converge of 20 containers (pull, create, start, one second look) | ${fmt(first)} ms | | | |`,
      `| no-op of 20 declared containers, in-process (one listing by label) | ${fmt(median(noop))} ms | | | 100 ms: ${median(noop) <= 100 ? 'met' : 'missed'} |`,
      `| the engine's listing of the 20 by label alone (one API call, the no-op's floor) | ${fmt(median(listing))} ms | | | |`,
      `| one container replaced, whole apply (its second look waits ${PAUSE_MS} ms) | ${fmt(median(mesh))} ms | | | |`,
      `| one container replaced, without the second look's pause, against \`podman stop && podman rm && podman run\` | ${fmt(work)} ms | ${fmt(median(hand))} ms | ${(work / median(hand)).toFixed(2)}x | 1.2x: ${work / median(hand) <= 1.2 ? 'met' : 'missed'} |`,
      '',
      `The no-op is the engine's one listing and ${fmt(median(noop) - median(listing))} ms of mesh-host's own (plan, compare, save); podman answers the listing itself by reading each container's state, which is what the 100 ms target meets or misses on this machine at this load.`,
      '',
      'The replacement by hand checks nothing after its start; mesh-host looks at the container again after the pause (a container that dies within it fails the apply), so its whole apply is the pause longer.',
    ];
  } finally {
    await podman.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
