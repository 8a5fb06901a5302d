import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../support/cli.js';
import { filesUnder } from '../support/small-disk.js';
import { runTraced, tracedCalls } from '../support/strace-fault.js';
import { scratchFolders } from '../support/tree.js';

/**
 * A disk that fails under an apply: EIO (and ENOSPC) injected by strace at each write, fsync, fdatasync,
 * rename and unlink an apply makes, one walk a call, into the real program. Each run converges, fails
 * with a report naming the path and the code, or cannot start and says why: never a stack trace. Every
 * path on the root is as before or as declared, nothing else is left, the next apply converges, and
 * the reports in the outbox leave no sequence out.
 */
/** Every point of the walk with MESH_FAULT_WALK=all (minutes); otherwise a call's first, middle and last, which CI affords. */
const pick = (at: number[]) => (process.env['MESH_FAULT_WALK'] === 'all' || at.length <= 3 ? at : [at[0]!, at[Math.floor(at.length / 2)]!, at.at(-1)!]);

// A path under the root is reached through a descriptor of its directory (/proc/self/fd/N/name): those are the apply's own.
const lands = (line: string | undefined, under: string[]) => line !== undefined && [...under, '/proc/self/fd/'].some((dir) => line.includes(dir));

describe('a disk failing at every write, fsync and rename of an apply', () => {
  const folder = scratchFolders(afterEach);

  const before = { 'srv/app/a.conf': 'one a\n', 'srv/app/b.conf': 'one b\n', 'srv/c.conf': 'one c\n' };
  const after = (n: number) => ({ 'srv/app/a.conf': `${n} a\n`, 'srv/app/b.conf': `${n} b\n`, 'srv/c.conf': 'one c\n', 'srv/new/d.conf': `${n} d\n` });

  function declarationOf(files: Record<string, string>, sequence: number): string {
    const dirs = [...new Set(Object.keys(files).map((p) => p.slice(0, p.lastIndexOf('/'))))].filter((d) => d !== 'srv').sort();
    const id = (p: string) => p.replaceAll('/', '-');
    const resources = [...dirs.map((d) => ({ type: 'directory', id: id(d), path: `/${d}` })), ...Object.entries(files).map(([p, content]) => ({ type: 'file', id: id(p), path: `/${p}`, content }))];
    return JSON.stringify({ version: 1, node: hostname(), mode: 'converged', sequence, resources });
  }

  it('each injected EIO or ENOSPC fails the apply cleanly; the next apply converges; no report is lost', async () => {
    const work = folder();
    const root = join(work, 'root');
    const state = join(work, 'state');
    mkdirSync(join(root, 'srv'), { recursive: true });
    let sequence = 0;
    const declare = (files: Record<string, string>) => {
      const file = join(work, `d${++sequence}.json`);
      writeFileSync(file, declarationOf(files, sequence));
      return ['apply', file, '--root', root, '--state-dir', state, '--config', join(work, 'host.json'), '--json', '--log-level', 'error'];
    };
    const first = await runCli('mesh-host', declare(before));
    expect(first.code, first.stderr).toBe(0);

    // Which calls of a clean change touch the root or the state directory: those are walked.
    const walk: Array<{ call: string; error: string; threads: boolean; at: number[] }> = [];
    const main = await tracedCalls('mesh-host', declare(after(sequence + 1)), ['write', 'pwrite64'], false, [root, state], work);
    const pool = await tracedCalls('mesh-host', declare(after(sequence + 1)), ['fsync', 'fdatasync', 'rename', 'unlink'], true, [root, state], work);
    for (const [call, at] of Object.entries(main)) walk.push({ call, error: 'EIO', threads: false, at }, ...(call === 'write' ? [{ call, error: 'ENOSPC', threads: false, at }] : []));
    for (const [call, at] of Object.entries(pool)) walk.push({ call, error: 'EIO', threads: true, at });
    expect(main.write!.length).toBeGreaterThanOrEqual(5);
    expect(pool.fsync!.length).toBeGreaterThanOrEqual(5);
    expect(pool.rename!.length).toBeGreaterThanOrEqual(2);

    const declared = new Set([...Object.keys(before), ...Object.keys(after(0))]);
    const seen = { failed: 0, cannotStart: 0, converged: 0, runs: 0, unreached: 0 };
    for (const { call, error, threads, at } of walk) {
      for (const when of pick(at)) {
        const label = `${error} at ${call} #${when}`;
        const was = filesUnder(root);
        const args = declare(after(sequence + 1));
        const wanted = after(sequence);
        // The fault must land on the root's or the state directory's files; one that fell on libuv's own wake-up is run again.
        let run = await runTraced('mesh-host', args, { call, error, when, threads }, work);
        for (let tries = 1; !lands(run.injected, [root, state]) && tries < 5; tries += 1) run = await runTraced('mesh-host', args, { call, error, when, threads }, work);
        seen.runs += 1;
        // A run that never made its Nth such call (the one pool thread and the main thread shared the calls
        // otherwise than in the traced run) had nothing to fail: it must have converged, and is counted.
        if (run.injected === undefined && run.code === 0) seen.unreached += 1;
        else expect(lands(run.injected, [root, state]), `${label} landed on ${run.injected}`).toBe(true);
        expect(run.stderr, label).not.toContain('unexpected failure');
        expect(run.stderr, label).not.toMatch(/\n\s+at /);
        expect([0, 1, 4], `${label}: ${run.stdout}${run.stderr}`).toContain(run.code);
        if (run.code === 1) {
          seen.failed += 1;
          const report = (JSON.parse(run.stdout) as { report: { outcome: string; error?: { code?: string; path?: string; message: string } } }).report;
          expect(report.outcome, label).toBe('failed');
          expect(report.error?.code, `${label}: ${JSON.stringify(report.error)}`).toBe(error);
          expect(report.error?.path, label).toBeDefined();
          // A declared path is named in the message; one in the state directory is the store's, its journal's or the outbox's.
          if (report.error!.path!.startsWith(state)) expect(report.error!.message, label).toMatch(/the store|the intent journal|the report/);
          else expect(report.error!.message, label).toContain(report.error!.path!);
        } else if (run.code === 4) {
          seen.cannotStart += 1;
          expect(run.stderr, label).toContain(`the state directory ${state} could not be written (${error}`);
        } else seen.converged += 1;
        for (const [path, content] of Object.entries(filesUnder(root))) {
          expect(declared.has(path), `${label}: ${path} left on the root`).toBe(true);
          expect([was[path], wanted[path as keyof typeof wanted]], `${label}: ${path}`).toContain(content);
        }
        const again = await runCli('mesh-host', declare(wanted));
        expect(again.code, `${label}, then with the disk well: ${again.stdout}${again.stderr}`).toBe(0);
        expect(filesUnder(root), label).toEqual(wanted);
      }
    }
    // The faults landed: most runs failed, and none left a hole in the reports' sequence.
    expect(seen.failed).toBeGreaterThanOrEqual(10);
    expect(seen.unreached, 'runs that never reached the call to fail').toBeLessThanOrEqual(3);
    console.info(`failing disk: ${JSON.stringify(seen)}`);
    const sequences = readdirSync(join(state, 'outbox')).filter((n) => /^\d+\.json$/.test(n)).map((n) => Number(n.slice(0, -5))).sort((a, b) => a - b);
    expect(sequences.length).toBeGreaterThan(10);
    expect(sequences).toEqual(sequences.map((_, i) => sequences[0]! + i));
    for (const s of sequences) expect((JSON.parse(readFileSync(join(state, 'outbox', `${String(s).padStart(12, '0')}.json`), 'utf8')) as { sequence: number }).sequence).toBe(s);
  }, 900_000);
});
