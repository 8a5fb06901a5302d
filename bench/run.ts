import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { benchConverge, convergeNotes, convergeTable, CONVERGE_RUNS, type ConvergeFigures } from './converge.js';
import { benchStartup } from './startup.js';
import { benchServices } from './services.js';
import { benchPackages } from './packages.js';
import { benchContainers } from './containers.js';
import { benchLink } from './link.js';
import { benchFleet } from './fleet.js';
import { benchFleetPlan } from './fleet-plan.js';
import { benchFleetSend } from './fleet-send.js';
import { benchFleetView } from './fleet-view.js';
import { benchRollout } from './rollout.js';
import { benchWatch } from './watch.js';
import { benchWatchDaemon } from './watch-daemon.js';
import { benchArchive } from './archive.js';
import { benchRelease } from './release.js';
import { loadAverage, machine } from './stats.js';
import { benchPeers } from './peers.js';
import { benchCrash } from './crash.js';
import { benchPowerCut } from './powercut.js';
import { benchPowercutModel } from './powercut-model.js';
import { benchFuzz } from './fuzz.js';
import { benchScale } from './scale.js';
import { benchStatus } from './status.js';
import { benchNewcomer } from './newcomer.js';
import { benchPage } from './page.js';

const project = fileURLToPath(new URL('../../', import.meta.url));
const only = process.argv[2];

const sections: string[] = [];
const file = join(project, 'docs/bench.md');

/** Sections of the page by their `## ` heading; a run of one part (`npm run bench -- link`) keeps the others. */
function previousSections(): Map<string, string> {
  const map = new Map<string, string>();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return map;
  }
  for (const part of text.split(/\n(?=## )/).slice(1)) map.set(part.split('\n')[0]!, part.trimEnd());
  return map;
}

const out = () => {
  const now = new Map<string, string>();
  for (const part of sections.join('\n').split(/\n(?=## )/)) if (part.startsWith('## ')) now.set(part.split('\n')[0]!, part.trimEnd());
  // Every run keeps, in their places, the sections it did not write: those of the parts that run only when
  // named, and the hand-kept records no part writes (a section of a part that is gone is removed by hand).
  const merged = new Map([...previousSections(), ...now]);
  writeFileSync(
    file,
    [
      '# Benchmarks',
      '',
      'Written by `npm run bench` (bench/). Figures are medians of repeated runs on one machine in one run; compare them as ratios,',
      'since the machine is shared and noisy. `npm run bench -- converge` (or startup, services, packages, containers, link, fleet, peers, watch, watch-daemon, scale, page, archive, release) runs one part and keeps the others;',
      'crash, powercut, powercut-model, fuzz and newcomer take many minutes, and fleet-view is a comparison against an earlier build (FLEET_VIEW_AGAINST=DIR): they run only when named (`npm run fuzz` is `npm run bench -- fuzz`). Every run keeps the sections it does not write.',
      '',
      `Machine: ${machine()}`,
      '',
      ...[...merged.values()].flatMap((section) => [section, '']),
    ].join('\n'),
  );
};

async function convergeSection(): Promise<string[]> {
  const before = loadAverage();
  const rows: ConvergeFigures[] = [];
  for (const [files, dirs] of [[100, 10], [1000, 100], [10000, 1000]] as const) {
    rows.push(await benchConverge(files, dirs));
    console.error(`converge ${files}/${dirs} done`);
  }
  return ['## Converge of files', '', `Medians: ${CONVERGE_RUNS.inProcess} runs in-process, ${CONVERGE_RUNS.process} interleaved runs of each process; the whole process includes Node start-up; the`, 'floor is a bare `node` script that lstat()s, reads and compares the same files.', '', ...convergeTable(rows), ...convergeNotes(rows, { before, after: loadAverage() })];
}

function peersSection(): Promise<string[]> {
  // PEERS_SIZES=1000 PEERS_ROUNDS=3 narrow it; PEERS_AGAINST=DIR (a built checkout) runs its mesh-host beside this one's (and, with valgrind, counts both builds' instructions at 1,000 files); Puppet alone takes minutes a round at 10,000 files.
  // A 1,000-file run is a few hundred milliseconds, where one busy moment moves a median of three; a 10,000-file
  // drift moved 1.27-1.65x the durable floor across whole runs of one build at three rounds.
  const sizes = (process.env.PEERS_SIZES ?? '1000,10000').split(',').map(Number);
  const rounds = process.env.PEERS_ROUNDS ? () => Number(process.env.PEERS_ROUNDS) : (files: number) => (files <= 1000 ? 7 : 5);
  const tools = process.env.PEERS_TOOLS?.split(',');
  const against = process.env.PEERS_AGAINST;
  return benchPeers({ sizes, rounds, puppetRounds: Number(process.env.PEERS_PUPPET_ROUNDS ?? 1), ...(tools ? { tools } : {}), ...(against ? { against } : {}) });
}

/** The parts of the page, in its order; one that runs only when named (`alone`) takes minutes. */
const parts: Array<{ name: string; sections: () => Promise<string[]>; alone?: boolean }> = [
  { name: 'startup', sections: benchStartup },
  { name: 'converge', sections: convergeSection },
  { name: 'services', sections: benchServices },
  { name: 'packages', sections: benchPackages },
  { name: 'containers', sections: benchContainers },
  { name: 'link', sections: benchLink },
  { name: 'fleet', sections: async () => [...(await benchFleet()), '', ...(await benchFleetPlan()), '', ...(await benchRollout()), '', ...(await benchFleetSend())] },
  { name: 'scale', sections: benchScale },
  // A minute or two to fill 10,000 nodes, and meant to run against an earlier build (FLEET_VIEW_AGAINST).
  { name: 'fleet-view', sections: benchFleetView, alone: true },
  { name: 'status', sections: benchStatus },
  { name: 'page', sections: benchPage },
  { name: 'peers', sections: peersSection },
  // CRASH_INSTANTS narrows it.
  { name: 'crash', sections: () => benchCrash(Number(process.env.CRASH_INSTANTS ?? 200)), alone: true },
  // Tens of minutes: every cut is two boots of an emulated guest. POWERCUT_CUTS narrows it, POWERCUT_SCENARIOS picks.
  { name: 'powercut', sections: () => benchPowerCut(Number(process.env.POWERCUT_CUTS ?? 20), process.env.POWERCUT_SCENARIOS?.split(',')), alone: true },
  // Minutes: every tree a power cut could leave at every cut point of four works. POWERCUT_FILES sizes them.
  { name: 'powercut-model', sections: () => benchPowercutModel(Number(process.env.POWERCUT_FILES ?? 50)), alone: true },
  // MESH_FUZZ_COUNT narrows it.
  { name: 'fuzz', sections: () => benchFuzz(Number(process.env.MESH_FUZZ_COUNT ?? 100_000)), alone: true },
  { name: 'watch', sections: benchWatch },
  { name: 'watch-daemon', sections: benchWatchDaemon },
  { name: 'archive', sections: benchArchive },
  { name: 'release', sections: benchRelease },
  // Minutes, and everything downloaded again from Debian's and npm's registries.
  { name: 'newcomer', sections: benchNewcomer, alone: true },
];

/** Where a whole run's child process leaves its part's sections (see inOwnProcess). */
const partOut = process.env.MESH_HOST_BENCH_PART_OUT;

/**
 * A whole run takes each part in a fresh process, as `npm run bench -- PART` would: one part's heap and
 * garbage (a 10,000-file converge in-process), its timers and the environment it sets do not fall on the
 * next part's timings. The child hands its sections back through a file in `dir`; the page is written here, in order.
 */
function inOwnProcess(name: string, dir: string): string[] {
  const file = join(dir, `${name}.json`);
  const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), name], { stdio: 'inherit', env: { ...process.env, MESH_HOST_BENCH_PART_OUT: file } });
  if (child.status !== 0) throw new Error(`bench: the part ${name} exited ${child.status ?? child.signal}`);
  return JSON.parse(readFileSync(file, 'utf8')) as string[];
}

/** A whole run's scratch folder: the page as the run found it (for a part that keeps a subsection of its own, scale-shape.ts) and each part's sections. */
const wholeRun = only ? undefined : mkdtempSync(join(tmpdir(), 'mesh-host-bench-'));
if (wholeRun && existsSync(file)) {
  process.env.MESH_HOST_BENCH_PAGE = join(wholeRun, 'bench.md');
  copyFileSync(file, process.env.MESH_HOST_BENCH_PAGE);
}

try {
  for (const part of parts) {
    if (only ? part.name !== only : part.alone) continue;
    const lines = wholeRun ? inOwnProcess(part.name, wholeRun) : await part.sections();
    if (partOut) {
      writeFileSync(partOut, JSON.stringify(lines));
      break;
    }
    sections.push(...lines, '');
    out();
  }
} finally {
  if (wholeRun) rmSync(wholeRun, { recursive: true, force: true });
}
if (!partOut) console.error('docs/bench.md written');
