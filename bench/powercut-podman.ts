import { join } from 'node:path';
import { bootArchive, bootGuest, guestSystem, toolsDisk, type GuestBoot } from '../test/support/guest.js';
import { freshData, GUEST } from '../test/support/guest-cuts.js';
import { containerDeclaration, guestImage, loadImage, PODMAN_GUEST, PODMAN_SERVICE, podmanFiles, TIMED } from '../test/support/guest-podman.js';
import { releaseBuild } from '../test/support/releases.js';

/** What a container's replacement costs in the emulator's guest, in seconds (this machine's clock, and the guest's for each step). */
export interface PodmanFigures {
  /** The podman guest's system made (0 when it was in the cache). */
  system: number;
  /** QEMU started to the init's first line. */
  up: number;
  /** Started to podman's API answering, and (by the guest's clock) the service's start to its answer. */
  engine: number;
  engineInGuest: number;
  /** The image loaded and tagged, by the guest's clock. */
  load: number;
  /** The first apply (the container made and started, looked at twice), the replacement's, and an apply with nothing to do. */
  create: number;
  replace: number;
  noop: number;
  /** QEMU started to its power-off, the whole boot. */
  whole: number;
}

const seconds = (from: number) => (performance.now() - from) / 1000;

/** A step's `CODE SECONDS` from the console: the seconds, or a throw with the step's words when it failed. */
function step(guest: GuestBoot, name: string): number {
  const [code, took] = (guest.marked(`${name} `)[0] ?? '').split(' ');
  if (code !== '0') throw new Error(`${name} ended ${code ?? 'without a word'}: ${guest.marked(`said-${name} `).join(' ')}\n${guest.console().slice(-3000)}`);
  return Number(took);
}

/**
 * One boot of the podman guest that makes a container and replaces it as the host does (`mesh-host apply`
 * of a declaration with a container, then of the same with its spec changed), each step timed.
 */
export async function podmanFigures(dir: string, cache: string): Promise<PodmanFigures> {
  const made = performance.now();
  const system = guestSystem(cache, PODMAN_GUEST);
  const systemSeconds = seconds(made);
  const tools = await toolsDisk(dir, { 'mesh-host': releaseBuild('0.1.0') });
  const image = guestImage(dir);
  const flags = `--root ${GUEST.root} --state-dir ${GUEST.state} --config ${GUEST.config} --log-level warn`;
  const boot = bootArchive(join(dir, 'podman-figures.tar'), {
    ...podmanFiles(image),
    'first.json': JSON.stringify(containerDeclaration(image.sha256, 1)),
    'second.json': JSON.stringify(containerDeclaration(image.sha256, 2)),
    'run.sh': [
      'set -u', 'cd /run/boot', ...TIMED, ...PODMAN_SERVICE, ...loadImage(image.sha256),
      `timed create ${GUEST.program} apply /run/boot/first.json ${flags}`,
      `timed replace ${GUEST.program} apply /run/boot/second.json ${flags}`,
      `timed noop ${GUEST.program} apply /run/boot/second.json ${flags}`,
      'podman ps -a --format "{{.Names}} {{.State}}" | sed "s/^/MESH-GUEST:container /"',
    ].join('\n'),
  });
  const started = performance.now();
  const guest = bootGuest({ system, data: freshData(dir, 'podman-figures'), tools, boot });
  await guest.waitFor('up', 900_000);
  const up = seconds(started);
  const answered = await guest.waitFor('engine ', 900_000);
  const engine = seconds(started);
  if (answered === 'no') throw new Error(`podman's API did not answer:\n${guest.console().slice(-3000)}`);
  const engineInGuest = Number(await guest.waitFor('engine-after', 60_000));
  await guest.waitFor('done', 1_800_000);
  await guest.exited;
  return { system: systemSeconds, up, engine, engineInGuest, load: step(guest, 'load') + step(guest, 'tag'), create: step(guest, 'create'), replace: step(guest, 'replace'), noop: step(guest, 'noop'), whole: seconds(started) };
}
