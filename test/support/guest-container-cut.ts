import { join } from 'node:path';
import { bootArchive, bootGuest, bootToEnd, copyDisk, guestSystem, type GuestBoot, type GuestSystem } from './guest.js';
import { finding, FOUND, freshData, leakCheck, marked, PRELUDE, readLeaks, type PowerCutBench, type Scenario } from './guest-cuts.js';
import type { RecordedContainer, SeenContainer } from './guest-engine.js';
import { containerDeclaration, guestImage, loadImage, PODMAN_GUEST, PODMAN_SERVICE, PODMAN_SOCKET, podmanFiles, TIMED } from './guest-podman.js';

/**
 * A container's replacement cut short, in the guest with podman (guest-podman.ts): prepared once (the
 * image loaded, the container of generation 1 applied), the work is `mesh-host apply` of generation 2,
 * which the host makes by creating the new container under a name of its own while the old one runs,
 * then stopping and removing the old one and giving the new one the declared name and starting it.
 * After the cut, before the host runs again: the store opens, one or two containers of the resource are
 * in the engine (the old, the new, or the old beside the new one made and not started; never neither,
 * never two running), no container the host did not make, and nothing in podman's storage that podman
 * does not know (a container's storage left half made). Then the next apply converges: exactly one
 * container, the new one, running, the store recording it.
 * podman syncs none of its storage: what it wrote in the minute before a cut is lost as any unsynced
 * write is, and a podman that can no longer list its containers is said (a finding of kind `engine`).
 */

const NAME = 'container-replacement';
const RESOURCE = 'app';
/** podman's events (events_logger = "file"): the new container's creation is the replacement's first change. */
const EVENTS = '/run/libpod/events/events.log';
/** Says `MESH-GUEST:MARKER` once podman has logged an event of this status. */
const onEvent = (status: string, marker: string) => `(until grep -qs '"Status":"${status}"' ${EVENTS}; do sleep 0.1; done; echo MESH-GUEST:${marker}) &`;

/** Says `MESH-GUEST:containers-STEP` (the engine's containers and the store's records) and `MESH-GUEST:storage-only-STEP` (ids in podman's storage that podman has no container of). */
const containersCheck = (step: string) => [
  `/opt/mesh/node /opt/mesh/check.mjs containers ${PODMAN_SOCKET} /data/state | sed 's/^MESH-GUEST:containers/MESH-GUEST:containers-${step}/'`,
  // Said only when both listings were made: a podman that cannot list says nothing here.
  `podman ps -a -q --no-trunc >/run/known && podman ps -a -q --no-trunc --external >/run/stored && echo "MESH-GUEST:storage-only-${step} $(sort /run/known >/run/known.s; sort /run/stored | comm -13 /run/known.s - | tr '\\n' ' ')"`,
];

/** What the engine held at `step`, against the store: each departure from one container, recorded, is a finding. */
function readContainers(guest: GuestBoot, step: string, settled: boolean, problems: string[], found: Record<string, number>): void {
  const answer = guest.marked(`containers-${step} `)[0];
  if (answer === undefined) return finding(problems, found, 'no answer', `at ${step}: the store or the engine could not be read: ${guest.console().slice(-1500)}`);
  const seen = JSON.parse(answer) as { engine: SeenContainer[]; recorded: Record<string, RecordedContainer> } | { error: string };
  if ('error' in seen) return finding(problems, found, 'engine', `at ${step}: podman could not list its containers: ${seen.error}`);
  const { engine, recorded } = seen;
  const ours = engine.filter((c) => c.resource === RESOURCE);
  for (const c of engine.filter((e) => e.resource === undefined)) finding(problems, found, 'leaked', `at ${step}: container ${c.name} (${c.state}) is not the host's`);
  // Before the next apply the old container may stand beside the new one made and not yet started.
  const running = ours.filter((c) => c.state === 'running').length;
  if (ours.length > (settled ? 1 : 2) || running > 1) finding(problems, found, 'doubled', `at ${step}: ${ours.length} containers of ${RESOURCE}: ${ours.map((c) => `${c.name} ${c.id.slice(0, 12)} ${c.state}`).join(', ')}`);
  if (ours.length === 0) finding(problems, found, 'lost', `at ${step}: neither the old container of ${RESOURCE} nor the new one is there (the store records ${recorded[RESOURCE]?.id.slice(0, 12) ?? 'none'})`);
  const record = recorded[RESOURCE];
  if (!record) finding(problems, found, 'lost', `at ${step}: the store records no container of ${RESOURCE}`);
  const one = ours.length === 1 ? ours[0]! : undefined;
  // Before the next apply, a container the host made and had not recorded yet is its own by its labels.
  if (one && record && one.id !== record.id && settled) finding(problems, found, 'failed', `at ${step}: the store records ${record.id.slice(0, 12)}, the engine has ${one.id.slice(0, 12)}`);
  if (one && settled && (one.state !== 'running' || one.spec !== record?.spec)) finding(problems, found, 'failed', `at ${step}: the container is ${one.state}, its spec ${one.spec === record?.spec ? 'the recorded one' : 'not the recorded one'}`);
  const storageOnly = guest.marked(`storage-only-${step}`)[0];
  if (storageOnly === undefined) finding(problems, found, 'no answer', `at ${step}: podman's containers and its storage's could not be listed`);
  else if (storageOnly.trim()) finding(problems, found, 'leaked', `at ${step}: in podman's storage with no container: ${storageOnly.trim()}`);
}

/** The boot after the cut: what the cut left read first, then the next apply and what it left. */
function recoveryScript(): string {
  return [
    ...PRELUDE, ...PODMAN_SERVICE, ...containersCheck('cut'),
    ...marked('converged', '$M apply /run/boot/work.json $F --log-level warn'),
    ...containersCheck('converged'),
    leakCheck('leaks-converged'),
  ].join('\n');
}

/** The container of generation 1 applied on a fresh disk (the image loaded first), podman stopped cleanly. */
async function prepare(bench: PowerCutBench, system: GuestSystem, sha256: string, image: { path: string }): Promise<string> {
  const data = freshData(bench.dir, NAME);
  const boot = bootArchive(join(bench.dir, `${NAME}-prepare.tar`), {
    ...podmanFiles(image),
    'first.json': JSON.stringify(containerDeclaration(sha256, 1)),
    'run.sh': [
      ...PRELUDE, ...TIMED, ...PODMAN_SERVICE, ...loadImage(sha256),
      ...marked('prepared', '$M apply /run/boot/first.json $F --log-level warn'),
      // Stopped before the power-off, so that the data disk unmounts: a container keeps files open on it.
      'podman stop -a -t 5 >/dev/null 2>&1',
    ].join('\n'),
  });
  const guest = await bootToEnd({ system, data, tools: bench.tools, boot }, 1_200_000);
  if (guest.marked('prepared ')[0] !== '0') throw new Error(`the first container could not be applied:\n${guest.console().slice(-3000)}`);
  return data;
}

/**
 * The scenario. Its work is counted from the new container's creation (the replacement's first change to
 * the engine; the host writes no intents for a container): from the apply's start, the host's own start
 * and plan are most of it in the emulator, and random cuts fell before the old container was touched (six
 * of six). With `fromWriting` it is counted from the old container's removal instead, the first step the
 * host takes once podman has answered the creation and the host has synced it: a cut inside podman's own
 * creation, before it answers, can leave podman's storage unreadable whatever the host does (podman writes
 * a layer's link files without syncing them, containers/storage issue 1064), and the test of the host's
 * part cuts only where the host's order and syncs are what is tested.
 */
export function containerReplacement(): Scenario {
  let system: GuestSystem | undefined;
  let sha256 = '';
  return {
    name: NAME,
    async prepare(bench) {
      system = guestSystem(bench.cache, PODMAN_GUEST);
      const image = guestImage(bench.dir);
      sha256 = image.sha256;
      return prepare(bench, system, sha256, image);
    },
    async cut(bench, prepared, at, fromWriting = false) {
      if (!system) throw new Error('the container replacement was not prepared');
      const data = copyDisk(prepared, join(bench.dir, `${NAME}.img`));
      const files = { ...podmanFiles(), 'work.json': JSON.stringify(containerDeclaration(sha256, 2)), 'found.json': JSON.stringify(FOUND) };
      const workBoot = bootArchive(join(bench.dir, `${NAME}-work.tar`), {
        ...files,
        'run.sh': [
          ...PRELUDE, ...PODMAN_SERVICE,
          onEvent('create', 'writing'),
          onEvent('remove', 'host-step'),
          'echo MESH-GUEST:work-start',
          ...marked('work-end', '$M apply /run/boot/work.json $F --log-level warn'),
          // The whole run's baseline is cut only once everything is on the disk: podman syncs none of its
          // storage, and a cut right after the work would measure podman's losses rather than the host's.
          'sync; echo MESH-GUEST:synced',
        ].join('\n'),
      });
      const guest = bootGuest({ system, data, tools: bench.tools, boot: workBoot });
      await guest.waitFor(fromWriting ? 'host-step' : 'writing', 900_000);
      const started = performance.now();
      if (at === undefined) await guest.waitFor('work-end', 900_000);
      else await Promise.race([new Promise((r) => setTimeout(r, at)), guest.exited]);
      const workMs = performance.now() - started;
      const inside = guest.marked('work-end').length === 0;
      if (at === undefined) await guest.waitFor('synced', 300_000);
      await guest.cut();
      // Where the cut fell, said beside each problem: podman's creation of the new container and the
      // host's sync of it come before the old one's removal, the host's own steps after.
      const where = guest.marked('host-step').length > 0 ? 'after the old container\'s removal' : 'before the old container\'s removal: in podman\'s creation of the new one, the host\'s sync of it or the old one\'s stop';
      const problems: string[] = [];
      const found: Record<string, number> = {};
      if (at === undefined && guest.marked('work-end ')[0] !== '0') problems.push(`the work itself failed: ${guest.marked('said-work-end ').join(' ')}`);
      const recovery = await bootToEnd({ system, data, tools: bench.tools, boot: bootArchive(join(bench.dir, `${NAME}-recover.tar`), { ...files, 'run.sh': recoveryScript() }) }, 1_200_000);
      if (recovery.marked('engine ')[0] === 'no') finding(problems, found, 'failed', `podman's API did not answer after the cut: ${recovery.console().slice(-1500)}`);
      readContainers(recovery, 'cut', false, problems, found);
      const converged = recovery.marked('converged ')[0];
      if (converged !== '0') finding(problems, found, 'failed', `the apply after the cut ended ${converged ?? 'without a word'}: ${recovery.marked('said-converged ').join(' ')}`);
      readContainers(recovery, 'converged', true, problems, found);
      readLeaks(recovery, 'converged', problems, found);
      return { at: Math.round(workMs), inside, problems: problems.map((p) => `${p} [the cut fell ${where}]`), found, workMs };
    },
  };
}
