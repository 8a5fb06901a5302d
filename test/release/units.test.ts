import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectDir } from '../support/cli.js';
import { openrcScript, systemdUnit } from '../../src/host/release/release-units.js';
import { unitLayout } from '../../src/host/release/install-release.js';

describe('the service definitions', () => {
  it('packaging/ holds what the installer writes for the default paths', () => {
    expect(readFileSync(join(projectDir, 'packaging/mesh-host.service'), 'utf8')).toBe(systemdUnit());
    expect(readFileSync(join(projectDir, 'packaging/mesh-host.openrc'), 'utf8')).toBe(openrcScript());
  });

  it('systemd: the launcher, 120 s to stop, TERM to the launcher alone, restarted on a crash and not after exit 2 or 4', () => {
    const unit = systemdUnit();
    expect(unit).toMatch(/^ExecStart=\/var\/lib\/mesh-host\/releases\/current\/mesh-host launch$/m);
    expect(unit).toMatch(/^TimeoutStopSec=120$/m);
    expect(unit).toMatch(/^KillMode=mixed$/m);
    expect(unit).toMatch(/^Restart=on-failure$/m);
    expect(unit).toMatch(/^RestartPreventExitStatus=2 4$/m);
  });

  it('OpenRC: supervise-daemon runs the launcher, TERM then KILL after 120 s', () => {
    const script = openrcScript();
    expect(script).toMatch(/^command="\/var\/lib\/mesh-host\/releases\/current\/mesh-host"$/m);
    expect(script).toMatch(/^command_args="launch"$/m);
    expect(script).toMatch(/^supervisor="supervise-daemon"$/m);
    expect(script).toMatch(/^retry="TERM\/120\/KILL\/5"$/m);
  });

  it('non-default paths are passed to the launcher, quoted where they need it', () => {
    const layout = unitLayout({ stateDir: '/srv/mesh state', configPath: '/etc/mesh-host/host.json' });
    expect(systemdUnit(layout)).toMatch(/^ExecStart=\/var\/lib\/mesh-host\/releases\/current\/mesh-host launch --state-dir "\/srv\/mesh state"$/m);
    expect(openrcScript(layout)).toMatch(/^command_args="launch --state-dir \\"\/srv\/mesh state\\""$/m);
  });
});
