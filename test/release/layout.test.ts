import { describe, expect, it } from 'vitest';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { executableProblem, moveCurrent, readCurrent, readDeclaredRelease, releaseLayout, releaseProblem } from '../../src/host/release/layout.js';
import { systemRunner } from '../../src/core/system/runner.js';
import { scratch } from '../support/tree.js';

/** The bad inputs of a release, each refused with a reason that names it. */
describe('releases on disk', () => {
  const setup = () => {
    const work = scratch('mesh-host-layout-');
    const layout = releaseLayout(work.dir);
    mkdirSync(layout.releasesDir, { recursive: true });
    mkdirSync(join(work.dir, 'etc/mesh-host'), { recursive: true });
    return { work, layout };
  };

  it('a release that is not an executable for this machine', () => {
    const { work } = setup();
    const script = join(work.dir, 'script');
    writeFileSync(script, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    expect(executableProblem(script)).toMatch(/is not an ELF executable/);
    const other = join(work.dir, 'other');
    const elf = Buffer.from(readFileSync(process.execPath).subarray(0, 64));
    elf.writeUInt16LE(183, 18); // aarch64
    writeFileSync(other, elf, { mode: 0o755 });
    expect(executableProblem(other)).toMatch(/an executable for another machine .*machine 183/);
    const plain = join(work.dir, 'plain');
    copyFileSync(process.execPath, plain);
    chmodSync(plain, 0o644);
    expect(executableProblem(plain)).toMatch(/is not executable \(mode 644\)/);
    expect(executableProblem(join(work.dir, 'none'))).toMatch(/does not exist/);
    work.cleanup();
  });

  it('a version named but not unpacked, and one whose executable says it is another', async () => {
    const { work, layout } = setup();
    expect(await releaseProblem(layout, '9.9.9', systemRunner())).toMatch(/release 9\.9\.9 is named but not unpacked/);
    mkdirSync(join(layout.releasesDir, '1.0.0'));
    // An executable for this machine that is not that release (node itself).
    copyFileSync(process.execPath, join(layout.releasesDir, '1.0.0/mesh-host'));
    expect(await releaseProblem(layout, '1.0.0', systemRunner())).toMatch(/says it is 'v20\.[0-9.]+', not mesh-host 1\.0\.0/);
    work.cleanup();
  });

  it('a current link pointing nowhere, or at no release', () => {
    const { work, layout } = setup();
    expect(readCurrent(layout)).toEqual({ ok: false, problem: expect.stringMatching(/does not exist: no release is installed/) });
    symlinkSync('2.0.0', join(layout.releasesDir, 'current'));
    expect(readCurrent(layout)).toEqual({ ok: false, problem: expect.stringMatching(/points to 2\.0\.0, which holds no mesh-host: the link points nowhere/) });
    moveCurrent(layout, '../../etc');
    expect(readCurrent(layout)).toEqual({ ok: false, problem: expect.stringMatching(/points to '\.\.\/\.\.\/etc', which is not a release/) });
    work.cleanup();
  });

  it('the declared release: absent is none, a path or garbage is refused', () => {
    const { work, layout } = setup();
    expect(readDeclaredRelease(layout)).toEqual({ ok: true, value: undefined });
    writeFileSync(layout.releaseFile, '1.2.3\n');
    expect(readDeclaredRelease(layout)).toEqual({ ok: true, value: '1.2.3' });
    writeFileSync(layout.releaseFile, '../../bin\n');
    expect(readDeclaredRelease(layout)).toEqual({ ok: false, problem: expect.stringMatching(/does not name a release: '\.\.\/\.\.\/bin'/) });
    work.cleanup();
  });
});
