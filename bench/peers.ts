import { spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmt, loadAverage, median } from './stats.js';

const project = fileURLToPath(new URL('../../', import.meta.url));
const DIRS = 10;
const MODE = 0o640;

type Phase = 'first' | 'no-op' | 'drift';
const PHASES: Phase[] = ['first', 'no-op', 'drift'];

/** The same tree for every tool: N files of 1 KiB in 10 directories, under a base path. */
function contentOf(i: number): string {
  const head = `# file ${i}\n`;
  const line = `key${i} = value\n`;
  return (head + line.repeat(Math.ceil(1024 / line.length))).slice(0, 1023) + '\n';
}

const pathOf = (base: string, i: number) => `${base}/d${i % DIRS}/f${i}.conf`;

interface Tool {
  name: string;
  /** A mesh-host's own process for a phase (the arguments after node's), which valgrind can count. */
  argv?: () => string[];
  /** Under which real directory its files land, and what it calls that place. */
  run(phase: Phase): void;
  /** The real path of file i. */
  real(i: number): string;
  /** Back to nothing, its own state included. */
  reset(): void;
}

function timed(command: string, args: string[], env: Record<string, string> = {}, okCodes = [0]): void {
  const r = spawnSync(command, args, { encoding: 'utf8', env: { ...process.env, ...env }, maxBuffer: 1 << 28 });
  if (r.status === null || !okCodes.includes(r.status)) throw new Error(`${command} ${args.slice(0, 3).join(' ')}… exited ${r.status ?? r.signal}: ${(r.stderr || r.stdout).slice(-600)}`);
}

/** The mesh-host of a built checkout: this one, or another (PEERS_AGAINST=DIR) to compare builds interleaved in one run. */
function meshHost(dir: string, n: number, checkout = project, name = 'mesh-host'): Tool {
  const root = join(dir, 'root');
  const state = join(dir, 'state');
  const decl = join(dir, 'decl.json');
  const resources: object[] = [{ type: 'directory', id: 'base', path: '/srv/bench' }];
  for (let d = 0; d < DIRS; d++) resources.push({ type: 'directory', id: `d${d}`, path: `/srv/bench/d${d}` });
  for (let i = 0; i < n; i++) resources.push({ type: 'file', id: `f${i}`, path: pathOf('/srv/bench', i), content: contentOf(i), mode: '0640' });
  writeFileSync(decl, JSON.stringify({ version: 1, node: 'bench', mode: 'converged', sequence: 1, resources }));
  writeFileSync(join(dir, 'host.json'), JSON.stringify({ node: 'bench' }));
  const reset = () => {
    rmSync(root, { recursive: true, force: true });
    rmSync(state, { recursive: true, force: true });
    mkdirSync(join(root, 'srv'), { recursive: true });
  };
  reset();
  const argv = () => [join(checkout, 'bin/mesh-host'), 'apply', decl, '--root', root, '--state-dir', state, '--config', join(dir, 'host.json'), '--log-level', 'warn'];
  return {
    name,
    argv,
    real: (i) => join(root, pathOf('/srv/bench', i)),
    run: () => timed(process.execPath, argv()),
    reset,
  };
}

/** The bare-node floors, by how they make the writes last. */
export type FloorKind = 'plain' | 'durable' | 'syncfs';
export const FLOOR_NAMES: Record<FloorKind, string> = {
  plain: 'floor, plain (no fsync)',
  durable: 'floor, durable (all at once)',
  syncfs: 'floor, syncfs (reference)',
};

/**
 * What Node alone costs to check these files and write the ones that differ. Plain writes in place,
 * no fsync. Durable is the fastest durable discipline known here: every temporary file opened and
 * written at once, all fsynced at once, closed, all renamed, then each directory fsynced once (a mode
 * change is a chmod and an fsync of the file). Syncfs writes temporaries without fsync, renames them, and
 * flushes the whole filesystem once (`sync -f`): as durable for these files, but it flushes everyone
 * else's writes too, so it is a reference, not a discipline for a host.
 */
function floor(dir: string, n: number, kind: FloorKind): Tool {
  const root = join(dir, 'root');
  const list = join(dir, 'list.json');
  writeFileSync(list, JSON.stringify(Array.from({ length: n }, (_, i) => [join(root, pathOf('/srv/bench', i)), contentOf(i)])));
  const script = join(dir, 'floor.mjs');
  writeFileSync(script, `import { lstatSync, readFileSync, writeFileSync, chmodSync, mkdirSync, renameSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { dirname } from 'node:path';
const files = JSON.parse(readFileSync(${JSON.stringify(list)}, 'utf8'));
const kind = ${JSON.stringify(kind)};
const write = [];
const mode = [];
const dirs = new Set(files.map(([p]) => dirname(p)));
for (const d of dirs) mkdirSync(d, { recursive: true });
for (const [path, content] of files) {
  let st;
  try { st = lstatSync(path); } catch { write.push([path, content]); continue; }
  const bytes = Buffer.from(content);
  if (st.size !== bytes.length || !readFileSync(path).equals(bytes)) write.push([path, content]);
  else if ((st.mode & 0o7777) !== 0o640) mode.push(path);
}
if (kind === 'plain') {
  for (const [path, content] of write) { writeFileSync(path, content, { mode: 0o640 }); chmodSync(path, 0o640); }
  for (const path of mode) chmodSync(path, 0o640);
} else if (kind === 'syncfs') {
  for (const [path, content] of write) { writeFileSync(path + '.tmp', content, { mode: 0o640, flag: 'wx' }); chmodSync(path + '.tmp', 0o640); renameSync(path + '.tmp', path); }
  for (const path of mode) chmodSync(path, 0o640);
  if (write.length + mode.length > 0) execFileSync('sync', ['-f', ${JSON.stringify(root)}]);
} else {
  const made = await Promise.all(write.map(async ([path, content]) => {
    const h = await open(path + '.tmp', 'wx', 0o640);
    await h.writeFile(content); await h.chmod(0o640);
    return h;
  }));
  const moded = await Promise.all(mode.map(async (path) => { const h = await open(path, 'r'); await h.chmod(0o640); return h; }));
  await Promise.all([...made, ...moded].map((h) => h.sync()));
  await Promise.all([...made, ...moded].map((h) => h.close()));
  await Promise.all(write.map(([path]) => rename(path + '.tmp', path)));
  const touched = new Set([...write.map(([p]) => dirname(p)), ...(write.length ? [dirname([...dirs][0])] : [])]);
  await Promise.all([...touched].map(async (d) => { const h = await open(d, 'r'); await h.sync(); await h.close(); }));
}
`);
  const reset = () => rmSync(root, { recursive: true, force: true });
  reset();
  return {
    name: FLOOR_NAMES[kind],
    real: (i) => join(root, pathOf('/srv/bench', i)),
    run: () => timed(process.execPath, [script]),
    reset,
  };
}

function cfengine(dir: string, n: number): Tool {
  const root = join(dir, 'root');
  const work = join(dir, 'work');
  const policy = join(dir, 'policy.cf');
  const lines = ['body common control { bundlesequence => { "main" }; }', 'body perms m { mode => "0640"; rxdirs => "false"; }', 'bundle agent main {', '  files:'];
  for (let i = 0; i < n; i++) lines.push(`    "${join(root, pathOf('/srv/bench', i))}" create => "true", perms => m, content => "${contentOf(i)}";`);
  lines.push('}');
  writeFileSync(policy, lines.join('\n'));
  const reset = () => {
    rmSync(root, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
    for (let d = 0; d < DIRS; d++) mkdirSync(join(root, `srv/bench/d${d}`), { recursive: true });
    // Its whole state under the work directory (-w), never /var/lib/cfengine3; it validates with cf-promises from there.
    mkdirSync(join(work, 'bin'), { recursive: true });
    symlinkSync('/usr/bin/cf-promises', join(work, 'bin/cf-promises'));
  };
  reset();
  return {
    name: 'CFEngine (in place, no fsync)',
    real: (i) => join(root, pathOf('/srv/bench', i)),
    run: () => timed('cf-agent', ['-K', '-I', '-w', work, '-f', policy]),
    reset,
  };
}

function puppet(dir: string, n: number): Tool {
  const root = join(dir, 'root');
  const site = join(dir, 'site.pp');
  const lines: string[] = [];
  for (let i = 0; i < n; i++) lines.push(`file { '${join(root, pathOf('/srv/bench', i))}': ensure => file, mode => '0640', content => "${contentOf(i).replace(/\n/g, '\\n')}" }`);
  writeFileSync(site, lines.join('\n'));
  // Every directory Puppet would write under /etc, /var or /run, moved under the scratch directory.
  const dirs = ['confdir', 'vardir', 'logdir', 'rundir', 'publicdir', 'codedir'].flatMap((d) => [`--${d}`, join(dir, 'puppet', d)]);
  const reset = () => {
    rmSync(root, { recursive: true, force: true });
    rmSync(join(dir, 'puppet'), { recursive: true, force: true });
    for (let d = 0; d < DIRS; d++) mkdirSync(join(root, `srv/bench/d${d}`), { recursive: true });
  };
  reset();
  return {
    name: 'Puppet',
    real: (i) => join(root, pathOf('/srv/bench', i)),
    // --detailed-exitcodes: 0 nothing changed, 2 changes made; 4/6 failures.
    run: () => timed('puppet', ['apply', '--detailed-exitcodes', ...dirs, site], {}, [0, 2]),
    reset,
  };
}

/** Every file as declared, whoever wrote it. */
function check(tool: Tool, n: number, phase: Phase): void {
  for (let i = 0; i < n; i++) {
    const real = tool.real(i);
    const st = lstatSync(real);
    if (!st.isFile() || (st.mode & 0o7777) !== MODE || readFileSync(real, 'utf8') !== contentOf(i)) throw new Error(`${tool.name}, ${phase}: ${real} is not as declared`);
  }
}

/** 20% of the files changed in content, 10% in mode. */
function drift(tool: Tool, n: number): void {
  for (let i = 0; i < n; i++) {
    if (i % 5 === 0) writeFileSync(tool.real(i), 'drifted\n');
    else if (i % 10 === 1) chmodSync(tool.real(i), 0o600);
  }
}

const has = (command: string) => spawnSync(command, ['--version'], { encoding: 'utf8' }).error === undefined;

export interface PeerOptions {
  sizes: number[];
  /** Rounds at each size (a median of more is steadier; a 10,000-file round takes a minute); Puppet may take fewer. */
  rounds: (files: number) => number;
  puppetRounds: number;
  /** Only these tools (by the start of their name: mesh-host, floor, CFEngine, Puppet); all when absent. */
  tools?: string[];
  /** Another built checkout whose mesh-host runs beside this one's, interleaved (PEERS_AGAINST). */
  against?: string;
}

const AGAINST = 'mesh-host, PEERS_AGAINST';
/**
 * With PEERS_AGAINST, each build's processes are also counted by valgrind at this size and below, this many
 * rounds: a count of instructions the machine's other work does not move, where a median of times here
 * moved by a fifth between two runs of the same two builds. Above it valgrind takes minutes a run.
 */
const COUNTED_FILES = 1000;
const COUNTED_ROUNDS = 2;

/** The instructions one process takes, every thread's (valgrind's callgrind, which runs them one at a time). */
function instructionsOf(argv: string[]): number {
  const r = spawnSync('valgrind', ['--tool=callgrind', '--callgrind-out-file=/dev/null', process.execPath, ...argv], { encoding: 'utf8', maxBuffer: 1 << 28 });
  const counted = /Collected : (\d+)/.exec(r.stderr ?? '');
  if (r.status !== 0 || !counted) throw new Error(`valgrind of ${argv.slice(0, 2).join(' ')} exited ${r.status ?? r.signal}: ${(r.stderr ?? '').slice(-600)}`);
  return Number(counted[1]);
}

/** Each build's phases counted by valgrind, `COUNTED_ROUNDS` times, every run checked: counts by `files|phase`, then tool. */
function countInstructions(tools: Tool[], n: number, counts: Record<string, Record<string, number[]>>): void {
  for (let round = 0; round < COUNTED_ROUNDS; round++) {
    for (const tool of tools) {
      for (const phase of PHASES) {
        if (phase === 'drift') drift(tool, n);
        const row = (counts[`${n}|${phase}`] ??= {});
        (row[tool.name] ??= []).push(instructionsOf(tool.argv!()));
        check(tool, n, phase);
      }
      tool.reset();
    }
    console.error(`peers ${n}: instructions, round ${round + 1} of ${COUNTED_ROUNDS} done`);
  }
}

/** The counts beside each other: the median of each build's runs (their range), and the ratio. */
function instructionRows(counts: Record<string, Record<string, number[]>>): string[] {
  const millions = (x: number) => `${(x / 1e6).toFixed(1)} M`;
  const cell = (xs: number[] | undefined) => (xs ? `${millions(median(xs))} (${millions(Math.min(...xs))} to ${millions(Math.max(...xs))})` : '—');
  return Object.entries(counts).map(([key, row]) => {
    const [n, phase] = key.split('|');
    const [mine, theirs] = [row['mesh-host'], row[AGAINST]];
    const ratio = mine && theirs ? `${(median(mine) / median(theirs)).toFixed(3)}×` : '—';
    return `| ${Number(n).toLocaleString('en')} ${phase} | ${cell(mine)} | ${cell(theirs)} | ${ratio} |`;
  });
}

/** The commit a checkout is at, for the page. */
function commitOf(dir: string): string {
  return spawnSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim() || dir;
}

/** Interleaved whole-process runs of every tool on its own copy of the same tree; every run checked. */
export async function benchPeers(options: PeerOptions): Promise<string[]> {
  const out: string[] = [];
  const rows: string[] = [];
  const figures: Record<string, Record<string, number>> = {};
  const counts: Record<string, Record<string, number[]>> = {};
  const counting = options.against !== undefined && has('valgrind');
  const missing: string[] = [];
  const loadBefore = loadAverage();
  if (!has('cf-agent')) missing.push('CFEngine (cf-agent)');
  if (!has('puppet')) missing.push('Puppet');
  for (const n of options.sizes) {
    const base = mkdtempSync(join(tmpdir(), `mesh-host-peers-${n}-`));
    try {
      const make = (name: string, f: (dir: string) => Tool) => {
        const dir = join(base, name);
        mkdirSync(dir, { recursive: true });
        return f(dir);
      };
      const all: Tool[] = [
        make('mesh', (d) => meshHost(d, n)),
        ...(options.against ? [make('against', (d) => meshHost(d, n, options.against, AGAINST))] : []),
        make('plain', (d) => floor(d, n, 'plain')),
        make('durable', (d) => floor(d, n, 'durable')),
        make('syncfs', (d) => floor(d, n, 'syncfs')),
        ...(has('cf-agent') ? [make('cf', (d) => cfengine(d, n))] : []),
        ...(has('puppet') ? [make('puppet', (d) => puppet(d, n))] : []),
      ];
      const tools = all.filter((t) => !options.tools || options.tools.some((name) => t.name.startsWith(name)));
      const times = new Map<string, number[]>();
      const rounds = options.rounds(n);
      for (let round = 0; round < rounds; round++) {
        for (const tool of tools) {
          if (tool.name === 'Puppet' && round >= options.puppetRounds) continue;
          for (const phase of PHASES) {
            if (phase === 'drift') drift(tool, n);
            // Each timed run starts with nothing unflushed: a fsync on this file system flushes the other
            // data its journal holds, so a tool would otherwise pay for the writes of the one before it
            // (a floor or CFEngine writing without fsync) or for the drift just made.
            spawnSync('sync');
            const t = performance.now();
            tool.run(phase);
            const ms = performance.now() - t;
            check(tool, n, phase);
            const key = `${tool.name}|${phase}`;
            times.set(key, [...(times.get(key) ?? []), ms]);
          }
          tool.reset();
        }
        console.error(`peers ${n}: round ${round + 1} of ${rounds} done`);
      }
      if (counting && n <= COUNTED_FILES) countInstructions(tools.filter((t) => t.argv), n, counts);
      for (const phase of PHASES) {
        const row: Record<string, number> = {};
        for (const tool of tools) {
          const xs = times.get(`${tool.name}|${phase}`);
          if (xs) row[tool.name] = median(xs);
        }
        figures[`${n}|${phase}`] = row;
      }
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  }
  const [plain, durable, syncfs] = [FLOOR_NAMES.plain, FLOOR_NAMES.durable, FLOOR_NAMES.syncfs];
  const names = ['mesh-host', ...(options.against ? [AGAINST] : []), plain, durable, syncfs, 'CFEngine (in place, no fsync)', 'Puppet'];
  const againstHead = options.against ? ' mesh-host ÷ PEERS_AGAINST |' : '';
  rows.push(`| files, phase | ${names.join(' | ')} | mesh-host ÷ plain floor | mesh-host ÷ durable floor | mesh-host ÷ syncfs | mesh-host ÷ CFEngine |${againstHead}`, `| --- |${' ---: |'.repeat(names.length + 4 + (options.against ? 1 : 0))}`);
  for (const [key, row] of Object.entries(figures)) {
    const [n, phase] = key.split('|');
    const cell = (name: string) => (row[name] === undefined ? '—' : `${fmt(row[name]!)} ms`);
    const ratio = (a: string, b: string) => (row[a] !== undefined && row[b] !== undefined ? `${(row[a]! / row[b]!).toFixed(2)}×` : '—');
    rows.push(`| ${Number(n).toLocaleString('en')} ${phase} | ${names.map(cell).join(' | ')} | ${ratio('mesh-host', plain)} | ${ratio('mesh-host', durable)} | ${ratio('mesh-host', syncfs)} | ${ratio('mesh-host', 'CFEngine (in place, no fsync)')} |${options.against ? ` ${ratio('mesh-host', AGAINST)} |` : ''}`);
  }
  out.push(
    '## Peers: the same files with mesh-host, bare-node floors, CFEngine and Puppet',
    '',
    `Whole processes, interleaved, each tool on its own copy of the same tree (N files of 1 KiB in ${DIRS} directories, mode 0640); every`,
    'run is checked file by file. Phases: first converge (empty tree), no-op, drift (20% of the files in content, 10% in mode). Medians of',
    `${options.sizes.map((n) => `${options.rounds(n)} rounds at ${n.toLocaleString('en')} files`).join(', ')} (Puppet: ${options.puppetRounds}). The plain floor writes in place without fsync; the durable floor opens and writes`,
    'every temporary at once, fsyncs them all at once, renames them all, then fsyncs each directory once (the fastest durable discipline known',
    'here); the syncfs floor renames unsynced temporaries and flushes the whole filesystem once (`sync -f`), a reference a host cannot use',
    "since it flushes every other process's writes too. CFEngine writes in place without fsync. CFEngine and",
    'Puppet keep their state under the scratch directory (`cf-agent -w`, `puppet apply --confdir/--vardir/…`). The file system is flushed',
    "(`sync`, untimed) before every timed run, so that no tool's fsyncs carry another's unflushed writes or the drift just made.",
    `Load average ${loadBefore} when the run began, ${loadAverage()} when it ended.`,
    ...(options.against ? [`This build ${commitOf(project)}; PEERS_AGAINST a built checkout of ${commitOf(options.against)}, run interleaved with it (its own column and the ratio).`] : []),
    ...(missing.length > 0 ? ['', `Not installed here, so not measured: ${missing.join(', ')} (\`scripts/setup.sh --peers\` installs them).`] : []),
    '',
    ...rows,
    '',
    'Targets, from these rows:',
    '',
    ...targetLines(figures),
  );
  if (Object.keys(counts).length > 0) {
    out.push(
      '',
      '### Instructions against PEERS_AGAINST',
      '',
      `Each build's mesh-host process counted by valgrind (\`--tool=callgrind\`: every thread's instructions, run one at a time), the same`,
      `trees and phases as above, ${COUNTED_ROUNDS} rounds at ${COUNTED_FILES.toLocaleString('en')} files, every run checked: a figure the machine's other work does not move.`,
      'It counts the work, not the waits: an fsync is one call whatever the disk takes.',
      '',
      '| files, phase | mesh-host | mesh-host, PEERS_AGAINST | ratio |',
      '| --- | ---: | ---: | ---: |',
      ...instructionRows(counts),
    );
  }
  return out;
}

/** The targets, met or missed as this run's own rows say: first converge and drift within 1.3× the durable floor, the no-op within 1.25× the plain one. */
function targetLines(figures: Record<string, Record<string, number>>): string[] {
  const lines: string[] = [];
  for (const [key, row] of Object.entries(figures)) {
    const [n, phase] = key.split('|') as [string, Phase];
    const [floorName, target] = phase === 'no-op' ? [FLOOR_NAMES.plain, 1.25] : [FLOOR_NAMES.durable, 1.3];
    if (row['mesh-host'] === undefined || row[floorName] === undefined) continue;
    const ratio = row['mesh-host'] / row[floorName];
    lines.push(`- ${Number(n).toLocaleString('en')} files, ${phase === 'first' ? 'first converge' : phase}: ${ratio.toFixed(2)}× the ${phase === 'no-op' ? 'plain' : 'durable'} floor (target ${target}×): **${ratio <= target ? 'met' : 'missed'}**`);
  }
  return lines;
}
