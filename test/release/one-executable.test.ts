import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chooseProgram } from '../../src/programs/both-programs.js';
import { releaseBuild } from '../support/releases.js';
import { scratch } from '../support/tree.js';

/**
 * The release's one executable carries both programs: meshctl when run by that name (a link to it, as
 * the installer and the Debian package make) or as `mesh-host ctl …`, mesh-host otherwise.
 */
describe('choosing the program', () => {
  it('by the name it is run as, then by the ctl subcommand', () => {
    expect(chooseProgram('/usr/bin/meshctl', ['send', 'n1'])).toEqual({ program: 'meshctl', args: ['send', 'n1'] });
    expect(chooseProgram('meshctl', [])).toEqual({ program: 'meshctl', args: [] });
    expect(chooseProgram('/usr/bin/mesh-host', ['ctl', 'reports', '--json'])).toEqual({ program: 'meshctl', args: ['reports', '--json'] });
    expect(chooseProgram('/usr/bin/mesh-host', ['run'])).toEqual({ program: 'mesh-host', args: ['run'] });
    // Only the first word is the subcommand: a later 'ctl' is an argument of mesh-host's.
    expect(chooseProgram('/var/lib/mesh-host/releases/current/mesh-host', ['apply', 'ctl'])).toEqual({ program: 'mesh-host', args: ['apply', 'ctl'] });
    // A copy renamed to something else is mesh-host.
    expect(chooseProgram('/opt/meshctl-old/mh', ['--version'])).toEqual({ program: 'mesh-host', args: ['--version'] });
  });
});

describe('the single executable', () => {
  it('is mesh-host by its own name, meshctl by a link and by `ctl`', () => {
    const executable = releaseBuild('0.1.0');
    const dir = scratch('mesh-host-one-executable-');
    try {
      symlinkSync(executable, join(dir.dir, 'meshctl'));
      const said = (command: string, args: string[]) => {
        const r = spawnSync(command, args, { encoding: 'utf8', timeout: 60_000 });
        expect(r.status, r.stderr).toBe(0);
        return r.stdout;
      };
      expect(said(executable, ['--version'])).toMatch(/^mesh-host 0\.1\.0 \(commit /);
      expect(said(join(dir.dir, 'meshctl'), ['--version'])).toMatch(/^meshctl 0\.1\.0 \(commit /);
      expect(said(executable, ['ctl', '--version'])).toMatch(/^meshctl 0\.1\.0 \(commit /);
      expect(said(join(dir.dir, 'meshctl'), ['--help'])).toMatch(/^usage: meshctl COMMAND/);
      expect(said(executable, ['--help'])).toMatch(/^usage: mesh-host COMMAND/);
    } finally {
      dir.cleanup();
    }
  }, 600_000);

  it('says only its own words when a container is declared: no warning of the native addons the container client does without', () => {
    const executable = releaseBuild('0.1.0');
    const dir = scratch('mesh-host-one-executable-container-');
    try {
      const socket = join(dir.dir, 'no-engine.sock');
      const image = { object: 'app-image', sha256: '0'.repeat(64) };
      writeFileSync(join(dir.dir, 'host.json'), JSON.stringify({ node: 'n1', containerSocket: socket }));
      writeFileSync(join(dir.dir, 'declaration.json'), JSON.stringify({
        version: 1, node: 'n1', mode: 'converged', sequence: 1,
        resources: [{ type: 'container', id: 'app', name: 'app', state: 'running', image, command: ['sh'] }],
      }));
      const r = spawnSync(executable, ['apply', join(dir.dir, 'declaration.json'), '--root', join(dir.dir, 'root'), '--state-dir', join(dir.dir, 'state'), '--config', join(dir.dir, 'host.json')], { encoding: 'utf8', timeout: 60_000 });
      // The engine is absent, so the apply refuses; what it says is its refusal alone.
      expect(r.status, r.stderr).toBe(3);
      expect(r.stderr.trim()).toBe(`mesh-host: containers are declared or recorded, but the container engine cannot be reached: connect ENOENT ${socket}; nothing was touched`);
    } finally {
      dir.cleanup();
    }
  }, 600_000);
});
