import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { applyDeclaration, type HostEnv } from '../src/engine/apply/apply.js';
import { hostHandlers } from '../src/host/env/host-environment.js';
import type { ArchiveObjects } from '../src/kinds/archive/objects.js';
import { receiveDeclaration } from '../src/core/declaration/load.js';
import type { Declaration, Resource } from '../src/core/declaration/schema.js';
import { systemAccounts } from '../src/engine/converge/unix-accounts.js';
import { Store } from '../src/core/store/store.js';
import { systemClock } from '../src/core/system/clock.js';
import { fmt, median, timeIt } from './stats.js';

const RUNS = { noop: 15, unpack: 5 } as const;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** One object in memory: the figures are of verifying, reading and unpacking, not of the network. */
function memoryStore(name: string, bytes: Buffer): ArchiveObjects {
  return {
    info: async () => ({ name, size: bytes.length, sha256: sha256(bytes) }),
    read: async () =>
      (async function* () {
        for (let at = 0; at < bytes.length; at += 128 * 1024) yield bytes.subarray(at, at + 128 * 1024);
      })(),
  };
}

function hostOver(dir: string, objects?: ArchiveObjects): { env: HostEnv; root: string } {
  const root = join(dir, 'root');
  mkdirSync(join(root, 'srv'), { recursive: true });
  const log = pino({ level: 'silent' });
  const stateDir = join(dir, 'state');
  const env: HostEnv = {
    node: 'bench', root, stateDir, store: Store.open(stateDir, log), log, clock: systemClock, accounts: systemAccounts(), handlers: hostHandlers({ node: 'bench', stateDir, clock: systemClock, ...(objects ? { archiveObjects: () => async () => objects } : {}) }),
  };
  return { env, root };
}

async function applyOnce(env: HostEnv, decl: Declaration): Promise<void> {
  const result = await applyDeclaration(env, { received: await receiveDeclaration(Buffer.from(JSON.stringify(decl)), { source: 'bench' }), origin: 'local', trigger: 'apply', dryRun: false, mayChangeMode: false });
  if (result.kind === 'refused' || result.kind === 'planned' || result.report.outcome !== 'converged') throw new Error(`bench apply: ${JSON.stringify(result).slice(0, 400)}`);
}

/** A tree of `files` files over `dirs` folders, as GNU tar packs it. */
function makeTree(dir: string, files: number, dirs: number, content: (i: number) => Buffer): string {
  const src = join(dir, 'src');
  for (let d = 0; d < dirs; d++) mkdirSync(join(src, `d${d}`), { recursive: true });
  for (let f = 0; f < files; f++) writeFileSync(join(src, `d${f % dirs}`, `f${f}.conf`), content(f));
  return src;
}

const decl = (resources: Resource[]): Declaration => ({ version: 1, node: 'bench', mode: 'converged', sequence: 1, resources });

/** The no-op check of an unpacked archive of 1,000 files against 1,000 file resources of the same files. */
async function noopFigures(): Promise<{ archiveMs: number; filesMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-host-bench-archive-'));
  try {
    const content = (f: number) => Buffer.from(`# file ${f}\nkey = value-${f}\nlimit = ${f * 7}\n`);
    const src = makeTree(dir, 1000, 100, content);
    const tgz = join(dir, 'a.tgz');
    spawnSync('tar', ['czf', tgz, '-C', src, '.']);
    const bytes = readFileSync(tgz);
    const archived = hostOver(join(dir, 'archive'), memoryStore('a.tgz', bytes));
    const archiveDecl = decl([{ type: 'archive', id: 'a', path: '/srv/bench', sha256: sha256(bytes), source: { object: 'a.tgz' } }]);
    const filed = hostOver(join(dir, 'files'));
    const filesDecl = decl([
      { type: 'directory', id: 'base', path: '/srv/bench' },
      ...Array.from({ length: 100 }, (_, d): Resource => ({ type: 'directory', id: `d${d}`, path: `/srv/bench/d${d}` })),
      ...Array.from({ length: 1000 }, (_, f): Resource => ({ type: 'file', id: `f${f}`, path: `/srv/bench/d${f % 100}/f${f}.conf`, content: content(f).toString(), mode: '0644' })),
    ]);
    await applyOnce(archived.env, archiveDecl);
    await applyOnce(filed.env, filesDecl);
    const archive: number[] = [];
    const files: number[] = [];
    // Interleaved, so that the machine's noise falls on both alike.
    for (let i = 0; i < RUNS.noop; i++) {
      archive.push(await timeIt(() => applyOnce(archived.env, archiveDecl)));
      files.push(await timeIt(() => applyOnce(filed.env, filesDecl)));
    }
    return { archiveMs: median(archive), filesMs: median(files) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The first unpack of a 20 MB tar.gz of 1,000 entries, against `tar xzf` of the same file (and with a `sync -f` after it). */
async function unpackFigures(): Promise<{ bytes: number; unpackMs: number; tarMs: number; tarSyncMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-host-bench-unpack-'));
  try {
    // Incompressible content, so the tar.gz itself is 20 MB: 980 files of 20 KiB over 20 folders.
    const src = makeTree(dir, 980, 20, () => randomBytes(20 * 1024 + 400));
    const tgz = join(dir, 'release.tgz');
    spawnSync('tar', ['czf', tgz, '-C', src, '.']);
    const bytes = readFileSync(tgz);
    const archiveDecl = decl([{ type: 'archive', id: 'release', path: '/srv/release', sha256: sha256(bytes), source: { object: 'release.tgz' } }]);
    const unpack: number[] = [];
    const tar: number[] = [];
    const tarSync: number[] = [];
    for (let i = 0; i < RUNS.unpack; i++) {
      const run = join(dir, `run-${i}`);
      const host = hostOver(run, memoryStore('release.tgz', bytes));
      unpack.push(await timeIt(() => applyOnce(host.env, archiveDecl)));
      for (const [list, sync] of [[tar, false], [tarSync, true]] as const) {
        const out = join(run, sync ? 'tar-sync' : 'tar');
        mkdirSync(out);
        const t = performance.now();
        spawnSync('tar', ['xzf', tgz, '-C', out]);
        if (sync) spawnSync('sync', ['-f', out]);
        list.push(performance.now() - t);
      }
      rmSync(run, { recursive: true, force: true });
    }
    return { bytes: bytes.length, unpackMs: median(unpack), tarMs: median(tar), tarSyncMs: median(tarSync) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchArchive(): Promise<string[]> {
  const noop = await noopFigures();
  console.error('archive no-op done');
  const first = await unpackFigures();
  console.error('archive unpack done');
  return [
    '## Archives',
    '',
    `In-process applies, medians of ${RUNS.noop} interleaved runs (no-op) and ${RUNS.unpack} (first unpack). The no-op reads the journal and lstat()s`,
    'each entry against what was last seen; the first unpack verifies the sha256, reads the archive once to refuse what is hostile and once',
    "to write, through the batched durable write path (every file fsynced and renamed, each folder fsynced); `tar xzf` fsyncs nothing.",
    '',
    '| what | mesh-host | against | ratio |',
    '| --- | ---: | ---: | ---: |',
    `| no-op check: an unpacked archive of 1,000 files (100 folders) vs 1,000 file resources (and their 101 directories) | ${fmt(noop.archiveMs)} ms | ${fmt(noop.filesMs)} ms | ${(noop.archiveMs / noop.filesMs).toFixed(2)}× |`,
    `| first unpack of a ${(first.bytes / 1e6).toFixed(1)} MB tar.gz of 1,000 entries vs \`tar xzf\` | ${fmt(first.unpackMs)} ms | ${fmt(first.tarMs)} ms | ${(first.unpackMs / first.tarMs).toFixed(2)}× |`,
    `| the same vs \`tar xzf\` then \`sync -f\` | ${fmt(first.unpackMs)} ms | ${fmt(first.tarSyncMs)} ms | ${(first.unpackMs / first.tarSyncMs).toFixed(2)}× |`,
  ];
}
