import { afterEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../support/cli.js';
import { scratchFolders } from '../support/tree.js';
import { filesUnder, SmallDisk } from '../support/small-disk.js';

/**
 * A disk that fills up under an apply, for real (a small tmpfs): at every fill level the apply either
 * converges or fails with a report that names the path and says ENOSPC as its code; every path is as
 * before or as declared, no temporary is left, and once the room is back the next apply converges.
 */
/** The same files with the same contents (compared without printing them: they are pages long). */
const same = (a: Record<string, string>, b: Record<string, string>) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());

describe('a full disk under an apply', () => {
  const folder = scratchFolders(afterEach);
  const disks: SmallDisk[] = [];
  afterEach(() => disks.splice(0).forEach((d) => d.unmount()));

  const KiB = 1024;
  const text = (c: string, kib: number) => `${c.repeat(kib * KiB - 1)}\n`;
  const v1 = { 'srv/app/a.conf': text('a', 8), 'srv/app/b.conf': text('b', 8), 'srv/c.conf': text('c', 8) };
  const v2 = { 'srv/app/a.conf': text('A', 12), 'srv/app/b.conf': text('B', 12), 'srv/c.conf': text('c', 8), 'srv/app/sub/d.conf': text('D', 12) };

  function declarationOf(files: Record<string, string>, sequence: number): string {
    const dirs = [...new Set(Object.keys(files).map((p) => p.slice(0, p.lastIndexOf('/'))))].filter((d) => d !== 'srv').sort();
    const resources = [
      ...dirs.map((d) => ({ type: 'directory', id: `dir-${d.replaceAll("/", "-")}`, path: `/${d}` })),
      ...Object.entries(files).map(([p, content]) => ({ type: 'file', id: `file-${p.replaceAll("/", "-")}`, path: `/${p}`, content })),
    ];
    return JSON.stringify({ version: 1, node: hostname(), mode: 'converged', sequence, resources });
  }

  function host(work: string, root: string, state: string) {
    let sequence = 0;
    const apply = async (files: Record<string, string>) => {
      const file = join(work, `d${++sequence}.json`);
      writeFileSync(file, declarationOf(files, sequence));
      const run = await runCli('mesh-host', ['apply', file, '--root', root, '--state-dir', state, '--config', join(work, 'host.json'), '--json', '--log-level', 'error']);
      return { ...run, out: run.stdout.trim() ? (JSON.parse(run.stdout) as { report?: { outcome: string; error?: { code?: string; path?: string; message: string } } }) : undefined };
    };
    return { apply };
  }

  it('the root fills at every write of an apply: each fails naming the path and ENOSPC, and the next apply converges', async () => {
    const work = folder();
    const disk = SmallDisk.mount(join(work, 'disk'), 256);
    disks.push(disk);
    const root = join(disk.dir, 'root');
    mkdirSync(join(root, 'srv'), { recursive: true });
    const { apply } = host(work, root, join(work, 'state'));
    const declared = new Set([...Object.keys(v1), ...Object.keys(v2)]);
    let failures = 0;
    const codes = new Set<string>();
    // From no room at all to room for the whole change, a page more each time: the change's writes are hit one after another.
    for (let leave = 0; leave <= 48 * KiB; leave += 4 * KiB) {
      const first = await apply(v1);
      expect(first.code, first.stdout + first.stderr).toBe(0);
      disk.leave(leave);
      const full = await apply(v2);
      expect([0, 1], `room ${leave}: ${full.stdout}${full.stderr}`).toContain(full.code);
      expect(full.stderr).not.toMatch(/\n\s+at /); // a report, never a stack trace
      if (full.code === 1) {
        failures += 1;
        const error = full.out?.report?.error;
        expect(full.out?.report?.outcome).toBe('failed');
        expect(error?.code, JSON.stringify(error)).toBe('ENOSPC');
        codes.add(error!.code!);
        expect(declared.has(error!.path!.slice(1)), `the error names a declared path: ${JSON.stringify(error)}`).toBe(true);
        expect(error!.message).toContain(error!.path!);
      }
      // Every path as before or as declared; nothing else (no temporary) on the root.
      const found = filesUnder(root);
      for (const [path, content] of Object.entries(found)) {
        expect(declared.has(path), `${path} left on the root at room ${leave}`).toBe(true);
        expect([v1[path as keyof typeof v1], v2[path as keyof typeof v2]], `${path} at room ${leave}`).toContain(content);
      }
      disk.release();
      const again = await apply(v2);
      expect(again.code, `after the room came back (${leave}): ${again.stdout}${again.stderr}`).toBe(0);
      expect(filesUnder(root)).toEqual(v2);
    }
    // The walk reached the change's writes: most levels had too little room.
    expect(failures).toBeGreaterThanOrEqual(5);
    expect([...codes]).toEqual(['ENOSPC']);
  }, 600_000);
  it('a read-only root is refused before anything is touched, naming it; a read-only state directory cannot start, naming it; remounted, the apply converges', async () => {
    const work = folder();
    const disk = SmallDisk.mount(join(work, 'disk'), 256);
    disks.push(disk);
    const root = join(disk.dir, 'root');
    mkdirSync(join(root, 'srv'), { recursive: true });
    const state = join(work, 'state');
    const { apply } = host(work, root, state);
    expect((await apply(v1)).code).toBe(0);
    execFileSync('mount', ['-o', 'remount,ro', disk.dir]);
    const refused = await apply(v2);
    expect(refused.code, refused.stdout + refused.stderr).toBe(3);
    expect(refused.stdout + refused.stderr).toContain(`the root ${root} is on a read-only file system (EROFS); nothing was touched`);
    expect(same(filesUnder(root), v1), 'the root untouched').toBe(true);
    execFileSync('mount', ['-o', 'remount,rw', disk.dir]);
    expect((await apply(v2)).code).toBe(0);
    expect(filesUnder(root)).toEqual(v2);

    // The state directory on the read-only disk: the host cannot start, and says which directory and why.
    const stateDisk = SmallDisk.mount(join(work, 'state-disk'), 512);
    disks.push(stateDisk);
    const other = host(work, root, stateDisk.dir);
    expect((await other.apply(v1)).code).toBe(0);
    const untouched = filesUnder(root);
    execFileSync('mount', ['-o', 'remount,ro', stateDisk.dir]);
    const cannot = await other.apply(v2);
    expect(cannot.code, cannot.stdout + cannot.stderr).toBe(4);
    expect(cannot.stderr).toContain(`the state directory ${stateDisk.dir} could not be written (EROFS)`);
    expect(cannot.stderr).not.toMatch(/\n\s+at /);
    expect(same(filesUnder(root), untouched), 'the root untouched').toBe(true);
    execFileSync('mount', ['-o', 'remount,rw', stateDisk.dir]);
    expect((await other.apply(v2)).code).toBe(0);
  }, 120_000);
});
