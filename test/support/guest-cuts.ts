import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Kvm } from '@nats-io/kv';
import { sign } from '../../src/core/declaration/envelope.js';
import type { Report } from '../../src/engine/report/report.js';
import { ensureWire } from '../../src/link/control.js';
import { DECLARATIONS_BUCKET } from '../../src/link/wire.js';
import { runCli } from './cli.js';
import { control, reportsOf } from './daemon.js';
import { NatsServer } from './nats.js';
import { join } from 'node:path';
import { bootArchive, bootGuest, bootToEnd, copyDisk, ext4Image, guestSystem, toolsDisk, type GuestBoot, type GuestSystem } from './guest.js';
import { releaseBuild } from './releases.js';
import { containerReplacement } from './guest-container-cut.js';

/**
 * Power cuts in a real guest kernel (see guest.ts): a scenario prepares a data disk once, then for each
 * cut copies it, boots the guest into the work, cuts the power (kills QEMU) at an instant inside the
 * work, boots again and checks what the cut left. The checks run in the guest, on its own kernel's view
 * of the disk after the cut, and are read off its console.
 */

/** Where the guest keeps the host's files: its data disk, mounted at /data. */
export const GUEST = { root: '/data/root', state: '/data/state', config: '/data/host.json', program: '/opt/mesh/mesh-host' };
const FLAGS = `--root ${GUEST.root} --state-dir ${GUEST.state} --config ${GUEST.config}`;
/** The shell lines every boot's script starts with. */
export const PRELUDE = ['set -u', `M=${GUEST.program}`, `F='${FLAGS}'`, 'cd /run/boot'];

/** What the data disk's root holds before the host comes: what a leak check takes as found there. */
export const FOUND = ['/', '/srv'];

export interface PowerCutBench {
  dir: string;
  /** Where guest systems are kept (a scenario of its own system makes it there). */
  cache: string;
  system: GuestSystem;
  tools: string;
  /** The nats-servers the scenarios started (one a scenario that has a mesh), stopped by close(). */
  servers: NatsServer[];
  /** Stops every server the scenarios started: a server left running outlives the test's process. */
  close(): Promise<void>;
}

/**
 * The guest system (taken from `cache`, a folder the caller names, or made there), this checkout's
 * single executable, and the tools disk of the run (in `dir`).
 */
export async function powerCutBench(dir: string, cache: string): Promise<PowerCutBench> {
  const system = guestSystem(cache);
  const tools = await toolsDisk(dir, { 'mesh-host': releaseBuild('0.1.0'), 'mesh-host-0.2.0': releaseBuild('0.2.0') });
  const servers: NatsServer[] = [];
  return { dir, cache, system, tools, servers, close: async () => void (await Promise.all(servers.splice(0).map((server) => server.stop()))) };
}

/** One cut's findings: every problem a check found (none is the target), and what happened. */
export interface CutResult {
  /** Milliseconds after the work began that the power was cut. */
  at: number;
  /** The work had not finished when the power went. */
  inside: boolean;
  problems: string[];
  /** Counts of what the checks found, by kind: lost, leaked, doubled (and any other kind named). */
  found: Record<string, number>;
}

export interface Scenario {
  name: string;
  /** Prepares the data disk every cut starts from. */
  prepare(bench: PowerCutBench): Promise<string>;
  /**
   * One cut at `at` ms into the work (or at the end of the work when undefined: the clean run that
   * measures it). With `fromWriting`, `at` counts from the host's first durable step of the work (an
   * apply's first intent written; a container's replacement: the old one's removal), not from the
   * start of the command.
   */
  cut(bench: PowerCutBench, data: string, at: number | undefined, fromWriting?: boolean): Promise<CutResult & { workMs: number }>;
}

function fileDeclaration(files: number, salt: string): object {
  const dirs = 10;
  const resources: object[] = [{ type: 'directory', id: 'app', path: '/srv/app' }];
  for (let d = 0; d < dirs; d++) resources.push({ type: 'directory', id: `d${d}`, path: `/srv/app/d${d}` });
  for (let i = 0; i < files; i++) resources.push({ type: 'file', id: `f${i}`, path: `/srv/app/d${i % dirs}/f${i}.conf`, content: `key = ${i} ${salt}\n`.repeat(20) });
  return { version: 1, node: 'guest', mode: 'converged', sequence: 1, resources };
}

const EMPTY = { version: 1, node: 'guest', mode: 'converged', sequence: 1, resources: [] };

/** The first data disk: an empty state directory, a root holding /srv, and the host's configuration. */
export function freshData(dir: string, name: string): string {
  const tree = join(dir, `${name}-fresh`);
  mkdirSync(join(tree, 'root/srv'), { recursive: true });
  writeFileSync(join(tree, 'host.json'), JSON.stringify({ node: 'guest' }));
  const image = join(dir, `${name}-prepared.img`);
  ext4Image(image, tree, 512, 'data');
  rmSync(tree, { recursive: true, force: true });
  return image;
}

/** The lines of a script that say what a command ended with. */
export const marked = (marker: string, command: string) => [`${command} >/run/${marker}.out 2>&1`, `echo "MESH-GUEST:${marker} $?"`, `[ "$(cat /run/${marker}.out | wc -c)" -gt 0 ] && tail -c 600 /run/${marker}.out | sed 's/^/MESH-GUEST:said-${marker} /'`];
export const leakCheck = (marker: string) => `/opt/mesh/node /opt/mesh/check.mjs leaks ${GUEST.root} ${GUEST.state} /run/boot/found.json | sed 's/^MESH-GUEST:leaks/MESH-GUEST:${marker}/'`;

/**
 * After a cut: the next delivery (the work's own declaration again) converges, and then nothing is on
 * the root or in the state directory that the store does not account for, nothing it records is
 * missing and no temporary file is left; a drop of everything then leaves the root as the host found
 * it (a file the store never learnt of would stay behind and show here).
 */
function recoveryScript(): string {
  return [
    ...PRELUDE,
    ...marked('converged', '$M apply /run/boot/work.json $F --log-level warn'),
    leakCheck('leaks-converged'),
    ...marked('dropped', '$M apply /run/boot/empty.json $F --log-level warn'),
    leakCheck('leaks-dropped'),
  ].join('\n');
}

/** Counts a finding under its kind and keeps its words. */
export function finding(problems: string[], found: Record<string, number>, kind: string, words: string): void {
  found[kind] = (found[kind] ?? 0) + 1;
  problems.push(words);
}

/** The leak check's answer marked `leaks-<step>`: a path recorded and missing is lost, anything else leaked. */
export function readLeaks(guest: GuestBoot, step: string, problems: string[], found: Record<string, number>): void {
  const answer = guest.marked(`leaks-${step} `)[0];
  if (answer === undefined) return finding(problems, found, 'no answer', `after ${step}: the leak check said nothing`);
  for (const leak of JSON.parse(answer) as string[]) finding(problems, found, / missing$/.test(leak) ? 'lost' : 'leaked', `after ${step}: ${leak}`);
}

function readRecovery(guest: GuestBoot, problems: string[], found: Record<string, number>): void {
  for (const step of ['converged', 'dropped']) {
    const code = guest.marked(`${step} `)[0];
    if (code !== '0') finding(problems, found, 'failed', `the apply after the cut (${step}) ended ${code ?? 'without a word'}: ${guest.marked(`said-${step} `).join(' ')}`);
    readLeaks(guest, step, problems, found);
  }
}

/** A cut of `mesh-host apply` of a declaration of files, on a disk prepared by `prepare`. */
function applyScenario(name: string, prepare: (bench: PowerCutBench) => Promise<string>, work: object): Scenario {
  return {
    name,
    prepare,
    async cut(bench, prepared, at, fromWriting = false) {
      const data = copyDisk(prepared, join(bench.dir, `${name}.img`));
      const files = { 'work.json': JSON.stringify(work), 'empty.json': JSON.stringify(EMPTY), 'found.json': JSON.stringify(FOUND) };
      const workBoot = bootArchive(join(bench.dir, `${name}-work.tar`), {
        ...files,
        'run.sh': [
          ...PRELUDE,
          // Says when the store first writes its intents: the apply's writing has begun.
          `(until [ -s ${GUEST.state}/intents ]; do sleep 0.05; done; echo MESH-GUEST:writing) &`,
          'echo MESH-GUEST:work-start',
          ...marked('work-end', '$M apply /run/boot/work.json $F --log-level warn'),
        ].join('\n'),
      });
      const guest = bootGuest({ system: bench.system, data, tools: bench.tools, boot: workBoot });
      await guest.waitFor(fromWriting ? 'writing' : 'work-start', 900_000);
      const started = performance.now();
      if (at === undefined) await guest.waitFor('work-end');
      else await Promise.race([new Promise((r) => setTimeout(r, at)), guest.exited]);
      const workMs = performance.now() - started;
      const inside = guest.marked('work-end').length === 0;
      await guest.cut();
      const problems: string[] = [];
      if (at === undefined && guest.marked('work-end ')[0] !== '0') problems.push(`the work itself failed: ${guest.marked('said-work-end ').join(' ')}`);
      const recovery = await bootToEnd({ system: bench.system, data, tools: bench.tools, boot: bootArchive(join(bench.dir, `${name}-recover.tar`), { ...files, 'run.sh': recoveryScript() }) });
      const found: Record<string, number> = {};
      readRecovery(recovery, problems, found);
      return { at: Math.round(workMs), inside, problems, found, workMs };
    },
  };
}

/** The size of the file scenarios' work: 2,000 files (the benchmark's); the test's one cut of each takes fewer. */
export const SCENARIO_FILES = 2000;

/** A first converge of `files` files on a fresh disk. */
export function firstConverge(files = SCENARIO_FILES): Scenario {
  return applyScenario('first-converge', async (bench) => freshData(bench.dir, 'first-converge'), fileDeclaration(files, 'first'));
}

/** A drift apply: the files converged (cleanly, power kept), then every one's content changed. */
export function driftApply(files = SCENARIO_FILES): Scenario {
  return applyScenario('drift', async (bench) => {
    const data = freshData(bench.dir, 'drift');
    const boot = bootArchive(join(bench.dir, 'drift-prepare.tar'), {
      'first.json': JSON.stringify(fileDeclaration(files, 'first')),
      'run.sh': [...PRELUDE, ...marked('prepared', '$M apply /run/boot/first.json $F --log-level warn')].join('\n'),
    });
    const guest = await bootToEnd({ system: bench.system, data, tools: bench.tools, boot });
    if (guest.marked('prepared ')[0] !== '0') throw new Error(`the drift's first converge failed:\n${guest.console().slice(-3000)}`);
    return data;
  }, fileDeclaration(files, 'drifted'));
}

/** Every scenario, in the page's order; `files` sizes the first converge and the drift. */
export function powerCutScenarios(files = SCENARIO_FILES): Scenario[] {
  return [firstConverge(files), driftApply(files), deliveryBurst(), selfUpdate(), containerReplacement()];
}

const BURST = 20;
const BURST_FILES = 20;
const NODE = 'guest';

/** The declaration of the `sequence`th delivery: the same 20 files, each saying which delivery wrote it. */
function burstDeclaration(sequence: number): object {
  const resources: object[] = [{ type: 'directory', id: 'app', path: '/srv/app' }];
  for (let i = 0; i < BURST_FILES; i++) resources.push({ type: 'file', id: `f${i}`, path: `/srv/app/f${i}.conf`, content: `delivery = ${sequence}\nfile = ${i}\n` });
  return { version: 1, node: NODE, mode: 'converged', epoch: 1, sequence, resources };
}

/** A daemon started in the background of a boot's script, its log in /run/daemon.log, waited for until connected. */
const DAEMON = [
  '$M run $F --log-level debug >/run/daemon.log 2>&1 &',
  'D=$!',
  'i=0; until grep -q "link: connected" /run/daemon.log; do sleep 0.2; i=$((i+1)); if [ $i -gt 3000 ]; then echo "MESH-GUEST:fail the daemon did not connect"; tail -c 1500 /run/daemon.log; break; fi; done',
];
/** Waits until the declaration `sequence` is applied and every report acknowledged, then stops the daemon. */
const settleAndStop = (sequence: number) => [
  `/opt/mesh/node /opt/mesh/check.mjs settled ${GUEST.state} ${sequence} 900`,
  'kill -TERM $D; wait $D; echo "MESH-GUEST:stopped $?"',
  // The daemon's last words, without its debug lines.
  "tail -c 1500 /run/daemon.log | grep -v 'level.:20' | sed 's/^/MESH-GUEST:said-daemon /'",
];

interface Burst {
  nats: NatsServer;
  /** The server's JetStream store as it was once the host was enrolled and its first report sent. */
  snapshot: string;
  seed: string;
}

/** A server on a loopback port with the mesh's buckets, a key pair and a bundle for `first` (naming the server as the guest reaches it). */
async function enrolment(bench: PowerCutBench, name: string, first: object): Promise<{ nats: NatsServer; seed: string; bundle: Buffer }> {
  const nats = await NatsServer.start();
  bench.servers.push(nats);
  const setup = await control([nats.url]);
  await ensureWire(setup);
  await setup.close();
  const keys = join(bench.dir, `${name}-keys`);
  const keygen = await runCli('meshctl', ['keygen', '--out', keys]);
  if (keygen.code !== 0) throw new Error(`meshctl keygen: ${keygen.stderr}`);
  const firstFile = join(bench.dir, `${name}-first.json`);
  writeFileSync(firstFile, JSON.stringify(first));
  const bundle = join(bench.dir, `${name}-bundle.json`);
  const made = await runCli('meshctl', ['bundle', firstFile, '--key', join(keys, 'operator.nk'), '--server', nats.url, '--host-server', 'nats://10.0.2.100:4222', '--out', bundle]);
  if (made.code !== 0) throw new Error(`meshctl bundle: ${made.stderr}`);
  return { nats, seed: readFileSync(join(keys, 'operator.nk'), 'utf8').trim(), bundle: readFileSync(bundle) };
}

/** The server stopped, its store kept as the snapshot every cut starts from, and started again. */
async function snapshotServer(bench: PowerCutBench, name: string, nats: NatsServer): Promise<string> {
  await nats.kill();
  const snapshot = join(bench.dir, `${name}-nats`);
  cpSync(nats.dir, snapshot, { recursive: true });
  await nats.run();
  return snapshot;
}

async function putDeclaration(burst: Burst, declaration: object): Promise<void> {
  const nc = await control([burst.nats.url]);
  try {
    await (await new Kvm(nc).open(DECLARATIONS_BUCKET)).put(NODE, JSON.stringify(await sign(Buffer.from(JSON.stringify(declaration)), burst.seed)));
  } finally {
    await nc.close();
  }
}

/** The server's store put back as the snapshot had it, the server started again on its port. */
async function restoreServer(burst: Burst): Promise<void> {
  await burst.nats.kill();
  rmSync(burst.nats.dir, { recursive: true, force: true });
  cpSync(burst.snapshot, burst.nats.dir, { recursive: true });
  await burst.nats.run();
}

async function putBurst(burst: Burst): Promise<void> {
  const nc = await control([burst.nats.url]);
  try {
    const kv = await new Kvm(nc).open(DECLARATIONS_BUCKET);
    for (let k = 2; k <= BURST + 1; k++) await kv.put(NODE, JSON.stringify(await sign(Buffer.from(JSON.stringify(burstDeclaration(k))), burst.seed)));
  } finally {
    await nc.close();
  }
}

async function streamReports(burst: Burst): Promise<Report[]> {
  const nc = await control([burst.nats.url]);
  try {
    return await reportsOf(nc, NODE);
  } finally {
    await nc.close();
  }
}

/** Waits for the report of the burst's last delivery in the stream. */
async function lastReported(burst: Burst, guest: GuestBoot): Promise<void> {
  for (;;) {
    if ((await streamReports(burst)).some((r) => r.declaration?.sequence === BURST + 1)) return;
    if (guest.marked('fail').length > 0) throw new Error(`the guest failed:\n${guest.console().slice(-3000)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * What the stream says after the cut and the boot that followed: every report acknowledged before the
 * cut is there, once and the same; sequences increase one by one (a gap is a report lost, unless a
 * later one says it folded it; a sequence twice is a report doubled or a sequence reused); the last
 * delivery's report is there and converged (made after the boot, or made before the cut and sent after).
 */
export function streamFindings(before: Report[], after: Report[], last: number, problems: string[], found: Record<string, number>): void {
  const bySequence = new Map<number, Report[]>();
  for (const r of after) bySequence.set(r.sequence, [...(bySequence.get(r.sequence) ?? []), r]);
  for (const [sequence, reports] of bySequence) if (reports.length > 1) finding(problems, found, 'doubled', `report ${sequence} is in the stream ${reports.length} times`);
  for (let i = 1; i < after.length; i++) if (after[i]!.sequence <= after[i - 1]!.sequence) finding(problems, found, 'out of order', `report ${after[i]!.sequence} follows report ${after[i - 1]!.sequence} in the stream`);
  for (const r of before) {
    const now = bySequence.get(r.sequence)?.[0];
    if (!now) finding(problems, found, 'lost', `report ${r.sequence}, acknowledged before the cut, is no longer in the stream`);
    else if (now.startedAt !== r.startedAt || JSON.stringify(now.declaration) !== JSON.stringify(r.declaration)) finding(problems, found, 'doubled', `report ${r.sequence} acknowledged before the cut was another report than the one there now: its sequence was reused`);
  }
  const covered = new Set<number>();
  for (const r of after) {
    covered.add(r.sequence);
    const folded = (r as Report & { folded?: { first: number; last: number } }).folded;
    if (folded) for (let s = folded.first; s <= folded.last; s++) covered.add(s);
  }
  const newest = Math.max(0, ...after.map((r) => r.sequence));
  for (let s = 1; s <= newest; s++) if (!covered.has(s)) finding(problems, found, 'lost', `report ${s} is missing from the stream (reports up to ${newest} are there)`);
  const final = after.find((r) => r.declaration?.sequence === last);
  if (!final) finding(problems, found, 'lost', `no report of delivery ${last} in the stream`);
  else if (final.outcome !== 'converged') finding(problems, found, 'failed', `delivery ${last} was reported ${final.outcome}: ${final.error?.message ?? ''}`);
}

/**
 * A burst of 20 deliveries to a running daemon, each a new declaration of the same 20 files, put one
 * after another while the reports of the ones before are being made and sent: a cut finds applies,
 * reports in the outbox and reports on the wire. After the cut the daemon starts again, and what the
 * stream holds is checked against what it held when the power went.
 */
export function deliveryBurst(): Scenario {
  let burst: Burst | undefined;
  return {
    name: 'delivery-burst',
    async prepare(bench) {
      const { nats, seed, bundle } = await enrolment(bench, 'burst', burstDeclaration(1));
      const data = freshData(bench.dir, 'burst');
      const boot = bootArchive(join(bench.dir, 'burst-prepare.tar'), {
        'bundle.json': bundle,
        'run.sh': [...PRELUDE, ...marked('genesis', '$M genesis /run/boot/bundle.json --mode converged $F --log-level warn'), ...DAEMON, ...settleAndStop(1)].join('\n'),
      });
      const guest = await bootToEnd({ system: bench.system, data, tools: bench.tools, boot, natsPort: nats.port });
      if (guest.marked('genesis ')[0] !== '0' || guest.marked('settled ')[0] !== 'yes') throw new Error(`the burst's host could not be enrolled:\n${guest.console().slice(-4000)}`);
      burst = { nats, snapshot: await snapshotServer(bench, 'burst', nats), seed };
      return data;
    },
    async cut(bench, prepared, at) {
      if (!burst) throw new Error('the burst was not prepared');
      await restoreServer(burst);
      const data = copyDisk(prepared, join(bench.dir, 'delivery-burst.img'));
      const found: Record<string, number> = {};
      const problems: string[] = [];
      const workBoot = bootArchive(join(bench.dir, 'burst-work.tar'), { 'run.sh': [...PRELUDE, ...DAEMON, 'echo MESH-GUEST:work-start', 'wait $D'].join('\n') });
      const guest = bootGuest({ system: bench.system, data, tools: bench.tools, boot: workBoot, natsPort: burst.nats.port });
      await guest.waitFor('work-start', 900_000);
      const started = performance.now();
      await putBurst(burst);
      let inside = true;
      if (at === undefined) {
        await lastReported(burst, guest);
        inside = false;
      } else {
        await Promise.race([new Promise((r) => setTimeout(r, Math.max(0, at - (performance.now() - started)))), guest.exited]);
      }
      const workMs = performance.now() - started;
      await guest.cut();
      const before = await streamReports(burst);
      if (at !== undefined) inside = !before.some((r) => r.declaration?.sequence === BURST + 1);
      const recoverBoot = bootArchive(join(bench.dir, 'burst-recover.tar'), { 'found.json': JSON.stringify(FOUND), 'run.sh': [...PRELUDE, ...DAEMON, ...settleAndStop(BURST + 1), leakCheck('leaks-stopped')].join('\n') });
      const recovery = await bootToEnd({ system: bench.system, data, tools: bench.tools, boot: recoverBoot, natsPort: burst.nats.port }, 1_200_000);
      if (recovery.marked('settled ')[0] !== 'yes') finding(problems, found, 'failed', `the daemon after the cut did not settle: ${recovery.marked('settled ')[0] ?? 'no answer'}; ${recovery.marked('said-daemon ').join(' ').slice(-1500)}`);
      if (recovery.marked('stopped ')[0] !== '0') finding(problems, found, 'failed', `the daemon after the cut stopped with ${recovery.marked('stopped ')[0] ?? 'no word'}`);
      readLeaks(recovery, 'stopped', problems, found);
      streamFindings(before, await streamReports(burst), BURST + 1, problems, found);
      return { at: Math.round(workMs), inside, problems, found, workMs };
    },
  };
}

/** Where an installed host keeps its files under the guest's --root (as `mesh-host install` lays them out). */
const INSTALLED = {
  state: `${GUEST.root}/var/lib/mesh-host`,
  releases: `${GUEST.root}/var/lib/mesh-host/releases`,
  config: `${GUEST.root}/etc/mesh-host/host.json`,
};
const INSTALLED_FLAGS = `--root ${GUEST.root} --state-dir ${INSTALLED.state} --config ${INSTALLED.config}`;
/** The launcher of the release `current` names, started in the background and waited for until its host is connected. */
const LAUNCHER = [
  `L='${INSTALLED_FLAGS}'`,
  `echo "MESH-GUEST:current-before $(readlink ${INSTALLED.releases}/current)"`,
  `echo "MESH-GUEST:runs $(${INSTALLED.releases}/current/mesh-host --version 2>&1 | head -1)"`,
  `${INSTALLED.releases}/current/mesh-host launch $L --log-level debug >/run/daemon.log 2>&1 &`,
  'D=$!',
  // The launcher's words as they come (its debug lines left out): what a trial did is on the console.
  "(tail -F /run/daemon.log 2>/dev/null | grep --line-buffered -v 'level.:20' | sed -u 's/^/MESH-GUEST:launcher /') &",
  'i=0; until grep -q "link: connected" /run/daemon.log; do sleep 0.2; i=$((i+1)); if [ $i -gt 3000 ]; then echo "MESH-GUEST:fail the launcher\'s host did not connect"; tail -c 1500 /run/daemon.log; break; fi; done',
];

/** The declaration of the self-update: a file, and /etc/mesh-host/release naming the release wanted. */
function releaseDeclaration(sequence: number, release: string): object {
  return {
    version: 1, node: NODE, mode: 'converged', epoch: 1, sequence,
    resources: [
      { type: 'directory', id: 'app', path: '/srv/app' },
      { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: `delivery = ${sequence}\n` },
      { type: 'file', id: 'release', path: '/etc/mesh-host/release', content: `${release}\n` },
    ],
  };
}

/**
 * A self-update under trial: a host installed by `mesh-host install` (release 0.1.0) with 0.2.0 unpacked
 * beside it, run by its launcher; the mesh names 0.2.0, which the launcher starts on trial and, once it
 * has applied and been acknowledged, makes current. A cut falls anywhere in that. After it the release
 * `current` names is the old or the new one and runs, its launcher serves, and the next delivery (which
 * still names 0.2.0) converges with 0.2.0 current.
 */
export function selfUpdate(): Scenario {
  let burst: Burst | undefined;
  return {
    name: 'self-update',
    async prepare(bench) {
      const { nats, seed, bundle } = await enrolment(bench, 'update', releaseDeclaration(1, '0.1.0'));
      const data = freshData(bench.dir, 'update');
      const boot = bootArchive(join(bench.dir, 'update-prepare.tar'), {
        'bundle.json': bundle,
        'run.sh': [
          ...PRELUDE,
          ...marked('installed', `$M install --root ${GUEST.root} --bundle /run/boot/bundle.json --mode converged --no-start --log-level warn`),
          // What an archive resource would have done: the new release unpacked beside the old.
          ...marked('unpacked', `mkdir -p ${INSTALLED.releases}/0.2.0 && cp /opt/mesh/mesh-host-0.2.0 ${INSTALLED.releases}/0.2.0/mesh-host`),
          ...LAUNCHER,
          `/opt/mesh/node /opt/mesh/check.mjs settled ${INSTALLED.state} 1 900`,
          'kill -TERM $D; wait $D; echo "MESH-GUEST:stopped $?"',
        ].join('\n'),
      });
      const guest = await bootToEnd({ system: bench.system, data, tools: bench.tools, boot, natsPort: nats.port });
      if (guest.marked('installed ')[0] !== '0' || guest.marked('unpacked ')[0] !== '0' || guest.marked('settled ')[0] !== 'yes') throw new Error(`the self-update's host could not be installed:\n${guest.console().slice(-4000)}`);
      burst = { nats, snapshot: await snapshotServer(bench, 'update', nats), seed };
      return data;
    },
    async cut(bench, prepared, at) {
      if (!burst) throw new Error('the self-update was not prepared');
      await restoreServer(burst);
      const data = copyDisk(prepared, join(bench.dir, 'self-update.img'));
      const found: Record<string, number> = {};
      const problems: string[] = [];
      const watchSwitch = `until [ "$(readlink ${INSTALLED.releases}/current)" = 0.2.0 ]; do sleep 0.2; done; echo MESH-GUEST:switched`;
      const workBoot = bootArchive(join(bench.dir, 'update-work.tar'), { 'run.sh': [...PRELUDE, ...LAUNCHER, 'echo MESH-GUEST:work-start', watchSwitch, 'wait $D'].join('\n') });
      const guest = bootGuest({ system: bench.system, data, tools: bench.tools, boot: workBoot, natsPort: burst.nats.port });
      await guest.waitFor('work-start', 900_000);
      const started = performance.now();
      await putDeclaration(burst, releaseDeclaration(2, '0.2.0'));
      if (at === undefined) await guest.waitFor('switched', 900_000);
      else await Promise.race([new Promise((r) => setTimeout(r, at)), guest.exited]);
      const workMs = performance.now() - started;
      const inside = guest.marked('switched').length === 0;
      await guest.cut();
      const before = await streamReports(burst);
      const recoverBoot = bootArchive(join(bench.dir, 'update-recover.tar'), {
        'run.sh': [
          ...PRELUDE, ...LAUNCHER, 'echo MESH-GUEST:serving',
          `/opt/mesh/node /opt/mesh/check.mjs settled ${INSTALLED.state} 3 900 | sed 's/^MESH-GUEST:settled/MESH-GUEST:applied/'`,
          // A cut inside the trial leaves 0.1.0 current: the launcher tries 0.2.0 again, and the trial's own
          // report follows; the launcher is stopped only once that is over (or ten minutes have passed).
          `i=0; until [ "$(readlink ${INSTALLED.releases}/current)" = 0.2.0 ] || [ $i -gt 3000 ]; do sleep 0.2; i=$((i+1)); done`,
          `/opt/mesh/node /opt/mesh/check.mjs settled ${INSTALLED.state} 3 900`,
          'kill -TERM $D; wait $D; echo "MESH-GUEST:stopped $?"',
          `echo "MESH-GUEST:current-after $(readlink ${INSTALLED.releases}/current)"`,
          `/opt/mesh/node /opt/mesh/check.mjs leaks-state ${INSTALLED.state} | sed 's/^MESH-GUEST:leaks/MESH-GUEST:leaks-stopped/'`,
          "tail -c 1500 /run/daemon.log | grep -v 'level.:20' | sed 's/^/MESH-GUEST:said-daemon /'",
        ].join('\n'),
      });
      const recovery = bootGuest({ system: bench.system, data, tools: bench.tools, boot: recoverBoot, natsPort: burst.nats.port });
      await recovery.waitFor('serving', 900_000);
      const release = recovery.marked('current-before ')[0];
      if (release !== '0.1.0' && release !== '0.2.0') finding(problems, found, 'failed', `after the cut, current names ${release ?? 'nothing'}: neither the old release nor the new`);
      if (!/0\.[12]\.0/.test(recovery.marked('runs ')[0] ?? '')) finding(problems, found, 'failed', `the release current names does not run: ${recovery.marked('runs ')[0] ?? 'no answer'}`);
      await putDeclaration(burst, releaseDeclaration(3, '0.2.0'));
      await recovery.waitFor('done', 1_200_000);
      await recovery.exited;
      if (recovery.marked('settled ')[0] !== 'yes') finding(problems, found, 'failed', `the next delivery did not converge: ${recovery.marked('settled ')[0] ?? 'no answer'}; ${recovery.marked('said-daemon ').join(' ').slice(-1500)}`);
      if (recovery.marked('current-after ')[0] !== '0.2.0') finding(problems, found, 'failed', `after the next delivery, current names ${recovery.marked('current-after ')[0] ?? 'nothing'}, not 0.2.0`);
      readLeaks(recovery, 'stopped', problems, found);
      streamFindings(before, await streamReports(burst), 3, problems, found);
      return { at: Math.round(workMs), inside, problems, found, workMs };
    },
  };
}
