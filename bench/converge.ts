import { chmodSync, lstatSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { applyDeclaration, type HostEnv } from '../src/engine/apply/apply.js';
import { hostHandlers } from '../src/host/env/host-environment.js';
import { receiveDeclaration } from '../src/core/declaration/load.js';
import { newOperatorKey, sign, digestOf } from '../src/core/declaration/envelope.js';
import type { HostConfig } from '../src/core/config/config.js';
import { RememberedKept } from '../src/host/daemon/remembered-kept.js';
import { runWork } from '../src/host/daemon/worker.js';
import { Outbox } from '../src/engine/report/outbox.js';
import type { Declaration, Resource } from '../src/core/declaration/schema.js';
import { systemAccounts } from '../src/engine/converge/unix-accounts.js';
import { Store } from '../src/core/store/store.js';
import { systemClock } from '../src/core/system/clock.js';
import { fmt, median, timeIt, wallProcess } from './stats.js';

const project = fileURLToPath(new URL('../../', import.meta.url));

export function declarationOf(files: number, dirs: number): Declaration {
  const resources: Resource[] = [{ type: 'directory', id: 'base', path: '/srv/bench' }];
  for (let d = 0; d < dirs; d++) resources.push({ type: 'directory', id: `d${d}`, path: `/srv/bench/d${d}` });
  for (let f = 0; f < files; f++) {
    resources.push({ type: 'file', id: `f${f}`, path: `/srv/bench/d${f % dirs}/f${f}.conf`, content: `# file ${f}\nkey = value-${f}\nlimit = ${f * 7}\n`, mode: '0644' });
  }
  return { version: 1, node: 'bench', mode: 'converged', sequence: 1, resources };
}

/** The floor: a bare node script that lstat()s, reads and compares the same files. */
function floorScript(dir: string, decl: Declaration): string {
  const files = decl.resources.flatMap((r) => (r.type === 'file' ? [[r.path, r.content]] : []));
  const listPath = join(dir, 'floor-list.json');
  writeFileSync(listPath, JSON.stringify(files));
  const script = join(dir, 'floor.mjs');
  writeFileSync(script, `import { lstatSync, readFileSync } from 'node:fs';
const root = ${JSON.stringify(join(dir, 'root'))};
const files = JSON.parse(readFileSync(${JSON.stringify(listPath)}, 'utf8'));
let same = 0;
for (const [path, content] of files) {
  const st = lstatSync(root + path);
  if (st.isFile() && readFileSync(root + path).equals(Buffer.from(content))) same++;
}
if (same !== files.length) process.exit(1);
`);
  return script;
}

export interface ConvergeFigures {
  files: number;
  dirs: number;
  /** The daemon's reconcile of its kept signed declaration, found as declared: silent, nothing written. */
  reconcileNoopMs: number;
  reconcileNoopCpuMs: number;
  inProcessNoopMs: number;
  /** CPU of the process (all threads: the collector's too) over the same no-ops. */
  inProcessNoopCpuMs: number;
  /** A bare loop of lstatSync over the same declared paths, timed beside each reconcile: the part no check can shed. */
  lstatLoopMs: number;
  inProcessDriftMs: number;
  processNoopMs: number;
  floorMs: number;
  processRssMb: number;
}

/** In-process runs are cheap and processes are not; both medians, over enough runs to ride out this machine's noise. */
export const CONVERGE_RUNS = { inProcess: 15, process: 9 } as const;

/** The host environment of an apply on a scratch tree, as both rows make it (a silent log, no services). */
const benchEnv = (root: string, stateDir: string, store: Store, extra: Partial<HostEnv> = {}): HostEnv => ({
  node: 'bench', root, stateDir, store, log: pino({ level: 'silent' }), clock: systemClock, accounts: systemAccounts(), handlers: hostHandlers({ node: 'bench', stateDir, clock: systemClock }), ...extra,
});

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/**
 * The no-op as the daemon makes it at every reconcile: the worker's own path (runWork) over
 * the kept signed declaration, which is read and hashed each time (it could have changed on disk) but
 * checked and parsed only once while its bytes stay the same; the apply finds everything as declared,
 * makes no report and writes nothing. Its own tree and store, so that nothing of the apply rows mixes in.
 */
async function reconcileNoops(files: number, dirs: number, runs: number): Promise<{ ms: number[]; cpu: number[]; lstatLoop: number[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-host-bench-'));
  try {
    const root = join(dir, 'root');
    const stateDir = join(dir, 'state');
    mkdirSync(join(root, 'srv'), { recursive: true });
    mkdirSync(stateDir);
    const key = await newOperatorKey();
    const decl = declarationOf(files, dirs);
    const payload = Buffer.from(JSON.stringify(decl));
    const kept = new RememberedKept(stateDir);
    kept.keep(Buffer.from(JSON.stringify(await sign(payload, key.seed))), 1, digestOf(payload));
    const store = Store.open(stateDir, pino({ level: 'silent' }));
    const config = { node: 'bench', publicKey: key.publicKey } as HostConfig;
    const outbox = new Outbox(stateDir);
    const deps = {
      config: () => config,
      kept,
      outbox,
      env: (s: Store) => benchEnv(root, stateDir, s, { outbox }),
      clock: systemClock,
    };
    const reconcile = async () => {
      await runWork(deps, store, { kind: 'reconcile' });
      if (store.state.lastOutcome?.outcome !== 'converged') throw new Error(`bench reconcile: ${JSON.stringify(store.state.lastOutcome)}`);
    };
    await reconcile(); // the first makes the tree, and speaks
    const spoken = outbox.pending().length;
    const paths = decl.resources.map((r) => root + (r as { path: string }).path);
    const ms: number[] = [];
    const cpu: number[] = [];
    const lstatLoop: number[] = [];
    for (let i = 0; i < runs; i++) {
      const before = cpuMs();
      ms.push(await timeIt(reconcile));
      cpu.push(cpuMs() - before);
      // The same paths, one lstat each and nothing else, right after: what the machine's lstat costs now.
      lstatLoop.push(await timeIt(() => {
        for (const path of paths) lstatSync(path);
      }));
    }
    if (outbox.pending().length !== spoken) throw new Error('bench reconcile: a no-op reconcile made a report');
    return { ms, cpu, lstatLoop };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchConverge(files: number, dirs: number): Promise<ConvergeFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-host-bench-'));
  try {
    const root = join(dir, 'root');
    mkdirSync(join(root, 'srv'), { recursive: true });
    const decl = declarationOf(files, dirs);
    const bytes = Buffer.from(JSON.stringify(decl));
    const declPath = join(dir, 'decl.json');
    writeFileSync(declPath, bytes);
    writeFileSync(join(dir, 'host.json'), JSON.stringify({ node: 'bench' }));
    const env = benchEnv(root, join(dir, 'state'), Store.open(join(dir, 'state'), pino({ level: 'silent' })));
    const once = async () => {
      const result = await applyDeclaration(env, { received: await receiveDeclaration(bytes, { source: 'bench' }), origin: 'local', trigger: 'apply', dryRun: false, mayChangeMode: false });
      if (result.kind !== 'applied' || result.report.outcome !== 'converged') throw new Error(`bench apply: ${JSON.stringify(result).slice(0, 300)}`);
      return result.report;
    };
    await once();
    const noop: number[] = [];
    const noopCpu: number[] = [];
    const drift: number[] = [];
    for (let i = 0; i < CONVERGE_RUNS.inProcess; i++) {
      const before = cpuMs();
      noop.push(await timeIt(once));
      noopCpu.push(cpuMs() - before);
    }
    const fileResources = decl.resources.filter((r) => r.type === 'file');
    for (let i = 0; i < CONVERGE_RUNS.inProcess; i++) {
      // 10% of the files drift: half in content, half in mode.
      fileResources.forEach((r, j) => {
        if (j % 10 !== i % 10) return;
        const p = join(root, r.path);
        if (j % 20 < 10) writeFileSync(p, 'drifted\n');
        else chmodSync(p, 0o600);
      });
      drift.push(await timeIt(once));
    }
    const flags = ['apply', declPath, '--root', root, '--state-dir', join(dir, 'state'), '--config', join(dir, 'host.json'), '--log-level', 'warn'];
    const floor = floorScript(dir, decl);
    const processRuns: Array<{ ms: number; rssMb: number }> = [];
    const floorRuns: number[] = [];
    for (let i = 0; i < CONVERGE_RUNS.process; i++) {
      // Interleaved, so that the machine's noise falls on both alike.
      const p = wallProcess(process.execPath, [join(project, 'bin/mesh-host'), ...flags]);
      if (p.code !== 0) throw new Error(`mesh-host apply exited ${p.code}`);
      processRuns.push(p);
      floorRuns.push(wallProcess(process.execPath, [floor]).ms);
    }
    const reconciles = await reconcileNoops(files, dirs, CONVERGE_RUNS.inProcess);
    return {
      files,
      dirs,
      reconcileNoopMs: median(reconciles.ms),
      reconcileNoopCpuMs: median(reconciles.cpu),
      inProcessNoopMs: median(noop),
      inProcessNoopCpuMs: median(noopCpu),
      lstatLoopMs: median(reconciles.lstatLoop),
      inProcessDriftMs: median(drift),
      processNoopMs: median(processRuns.map((r) => r.ms)),
      floorMs: median(floorRuns),
      processRssMb: Math.max(...processRuns.map((r) => r.rssMb)),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function convergeTable(rows: ConvergeFigures[]): string[] {
  return [
    '| files / dirs | the daemon\'s reconcile no-op | its CPU | apply of the bytes, no-op | its CPU | bare lstat loop, same paths | in-process 10% drift | `mesh-host apply` no-op | floor (bare node lstat+read+compare) | ratio to floor | peak RSS (process) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map((r) => `| ${r.files} / ${r.dirs} | ${fmt(r.reconcileNoopMs)} ms | ${fmt(r.reconcileNoopCpuMs)} ms | ${fmt(r.inProcessNoopMs)} ms | ${fmt(r.inProcessNoopCpuMs)} ms | ${fmt(r.lstatLoopMs)} ms | ${fmt(r.inProcessDriftMs)} ms | ${fmt(r.processNoopMs)} ms | ${fmt(r.floorMs)} ms | ${(r.processNoopMs / r.floorMs).toFixed(2)}× | ${r.processRssMb.toFixed(0)} MB |`),
  ];
}

/** What the table says against the targets, and what is left of the 10,000-file no-op, from this run's rows. */
export function convergeNotes(rows: ConvergeFigures[], load: { before: string; after: string }): string[] {
  const big = rows.find((r) => r.files === 10_000);
  const mid = rows.find((r) => r.files === 1_000);
  const lines = ['', `Load average before and after: ${load.before} / ${load.after} (2 cores).`, ''];
  if (big) {
    lines.push(
      `- **The 10,000-file no-op reconcile in-process, as the daemon makes it: ${fmt(big.reconcileNoopMs)} ms** (target: under 100 ms; ${big.reconcileNoopMs < 100 ? 'met' : 'missed'} on this run),`,
      `  ${fmt(big.reconcileNoopCpuMs)} ms of CPU: the kept signed declaration read and hashed, the check of every path, no report, nothing written.`,
      `- **The same no-op from the declaration's bytes: ${fmt(big.inProcessNoopMs)} ms** (${big.inProcessNoopMs < 100 ? 'under' : 'over'} 100 ms on this run), ${fmt(big.inProcessNoopCpuMs)} ms of CPU: the 1 MB parsed and`,
      '  checked again (30-40 ms), and a report made and the store saved, as `mesh-host apply FILE` does.',
      `- A bare loop of \`lstatSync\` over the same 11,011 paths took ${fmt(big.lstatLoopMs)} ms in the same process: the reconcile's own work beyond`,
      `  the one lstat a path is ${fmt(big.reconcileNoopMs - big.lstatLoopMs)} ms.`,
    );
  }
  if (mid) {
    lines.push(
      `- The whole \`mesh-host apply\` no-op at 1,000 files: ${(mid.processNoopMs / mid.floorMs).toFixed(2)}× this page's floor, a script that only lstats, reads and compares.`,
      '  The 1.25× target is held against the plain floor of the peer benchmark below (one tree of 10 directories for every tool).',
    );
  }
  lines.push(
    '- Why the lstat is most of what is left: on this VM (Firecracker, 2 cores, Node 20) any system call costs about 2 µs (11,000',
    "  lstats of `/` take 24 ms); through Node's bare binding the 11,000 declared paths take 44 ms, through `lstatSync` about 51 ms",
    '  (Node 20 makes a Stats and four Dates a call). `throwIfNoEntry: false` turns a missing path from 11 µs (a thrown ENOENT) into',
    "  3.5 µs; `bigint: true` costs a third more; lstats in parallel on libuv's threads (4 to 64 in flight) took 2 to 5 times the wall",
    '  of the synchronous loop. The rest of a reconcile: the kept declaration read (1.5 MB signed) and hashed, the comparisons, and',
    "  the collector's sweep of the Stats and Dates. On a scratch root no filters are read; on the machine itself a reconcile lists",
    '  them too. Touching fresh memory is dear here as well: a page fault costs about 18 µs on this VM (filling 16 MB of new pages',
    '  takes 75 ms, 1 ms once they are there): an apply from the bytes took 800 to 1,200 of them (15-20 ms), a reconcile about 50.',
  );
  return lines;
}
