import { beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Resource } from '../../src/core/declaration/schema.js';
import { useApplyInside } from '../support/apply-inside.js';
import { buildRepository, type TestPackage } from '../support/package-repo.js';
import { containerUnavailable, startSystemdContainer } from '../support/systemd-container.js';

/**
 * Packages on a booted machine: mesh-host applying inside a systemd booted in a container over a
 * volatile copy of this machine's root, with /usr under a throwaway overlay and a copy of this machine's
 * package database (everything it has installed), and apt reading only a local repository built
 * here. A service package's postinst does what Debian's do: enable its unit and start it through
 * deb-systemd-invoke, which asks policy-rc.d first.
 */

const UNIT = `[Unit]
Description=mhsvc, a service package made by a test
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'echo started > /var/lib/mhsvc-started'
[Install]
WantedBy=multi-user.target
`;
// What debhelper's dh_installsystemd writes in a postinst and a prerm, cut to what this package needs.
const POSTINST = `#!/bin/sh
set -e
if [ "$1" = configure ]; then
  deb-systemd-helper enable mhsvc.service >/dev/null || true
  if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
    deb-systemd-invoke start mhsvc.service >/dev/null || true
  fi
fi
`;
const PRERM = `#!/bin/sh
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then deb-systemd-invoke stop mhsvc.service >/dev/null || true; fi
`;

const PACKAGES: TestPackage[] = [
  { name: 'mhdemo', version: '1.0-1' },
  { name: 'mhdemo', version: '2.0-1' },
  { name: 'mhdep', version: '1.0-1' },
  { name: 'mhapp', version: '1.0-1', depends: 'mhdep (>= 1.0)' },
  { name: 'mhsvc', version: '1.0-1', postinst: POSTINST, prerm: PRERM, files: { 'usr/lib/systemd/system/mhsvc.service': { text: UNIT } } },
];

const pkg = (name: string, version: string): Resource => ({ type: 'package', id: `pkg-${name}`, name, version }) as Resource;

const unavailable = containerUnavailable();
describe.skipIf(unavailable !== undefined && !process.env.CI)(`packages on a booted systemd machine${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const inside = useApplyInside('packages', {
    start: (binds) => {
      // The package database: a copy of this machine's, in the scratch folder (the second bind).
      const database = join(binds[1]!, 'dpkg');
      execFileSync('cp', ['-a', '/var/lib/dpkg', database]);
      // Its overrides name this machine's groups, and the container's /etc starts with none of them.
      writeFileSync(join(database, 'statoverride'), '');
      return startSystemdContainer({ binds: [...binds, `${database}:/var/lib/dpkg`], writable: ['/usr'] });
    },
  });
  const run = async (command: string, args: string[]) => inside.container.exec(command, args, 60_000);
  const sh = async (script: string) => {
    const result = await run('sh', ['-c', script]);
    if (result.code !== 0) throw new Error(`${script}: exit ${result.code}: ${result.stderr}`);
    return result.stdout.trim();
  };
  const installed = async (name: string) => (await run('dpkg-query', ['-W', '-f', '${Version} ${db:Status-Abbrev}', name])).stdout.trim();

  beforeAll(() => {
    // The repository in the scratch folder bound in; the machine's only source, its lists read.
    const repo = join(inside.work, 'repo');
    buildRepository(PACKAGES, repo, join(inside.work, 'build'));
    return sh(
      [
        'mkdir -p /etc/apt/apt.conf.d /etc/apt/sources.list.d /var/lib/apt/lists/partial /var/cache/apt/archives/partial /var/log/apt',
        `echo 'deb [trusted=yes] file:${repo} ./' > /etc/apt/sources.list`,
        'apt-get update -q >/dev/null',
      ].join(' && '),
    );
  }, 120_000);

  it('installs pinned versions with a dependency, upgrades, reads them back, and removes what it installed', async () => {
    const state = `${inside.work}/install-state`;
    const first = await inside.apply([pkg('mhdemo', '1.0-1'), pkg('mhapp', 'present')], { state });
    expect(first.code, JSON.stringify(first.report)).toBe(0);
    expect(first.report.steps.map((s) => `${s.resource}:${s.status}:${s.actions.join(',')}`)).toEqual(['pkg-mhdemo:done:create,install 1.0-1,also installs mhdep 1.0-1', 'pkg-mhapp:done:create,install 1.0-1']);
    expect([await installed('mhdemo'), await installed('mhapp'), await installed('mhdep')]).toEqual(['1.0-1 ii', '1.0-1 ii', '1.0-1 ii']);

    const up = await inside.apply([pkg('mhdemo', '2.0-1'), pkg('mhapp', 'present')], { state, sequence: 2 });
    expect(up.code, JSON.stringify(up.report)).toBe(0);
    expect(up.report.steps.filter((s) => s.status !== 'unchanged').map((s) => s.actions.join(','))).toEqual(['upgrade 1.0-1→2.0-1']);
    expect(await installed('mhdemo')).toBe('2.0-1 ii');

    const gone = await inside.apply([], { state, sequence: 3 });
    expect(gone.code, JSON.stringify(gone.report)).toBe(0);
    expect(gone.report.steps.map((s) => `${s.resource}:${s.status}`)).toEqual(['pkg-mhapp:done', 'pkg-mhdemo:done']);
    expect([await installed('mhdemo'), await installed('mhapp')]).toEqual(['', '']);
  }, 180_000);

  it("keeps a package's service from starting while it installs, puts the machine's policy-rc.d back, and the declared service starts it after", async () => {
    const state = `${inside.work}/service-state`;
    // The machine's own policy lets every start through (this machine's image forbids them all).
    await sh("printf '#!/bin/sh\\nexit 0\\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d");
    const report = await inside.apply([pkg('mhsvc', '1.0-1')], { state });
    expect(report.code, JSON.stringify(report.report)).toBe(0);
    expect(await installed('mhsvc')).toBe('1.0-1 ii');
    // systemd knows the unit, the postinst enabled it, and deb-systemd-invoke, refused by our policy, did not start it.
    expect((await run('systemctl', ['is-enabled', 'mhsvc.service'])).stdout.trim()).toBe('enabled');
    expect((await run('systemctl', ['is-active', 'mhsvc.service'])).stdout.trim()).toBe('inactive');
    expect((await run('test', ['-e', '/var/lib/mhsvc-started'])).code).not.toBe(0);
    expect(await sh('cat /usr/sbin/policy-rc.d; ls /usr/sbin | grep -c mesh-host || true')).toBe('#!/bin/sh\nexit 0\n0');

    // Declared running, the service resource starts it, after the package.
    const running = await inside.apply([pkg('mhsvc', '1.0-1'), { type: 'service', id: 'mhsvc', unit: 'mhsvc.service', state: 'running' }], { state, sequence: 2 });
    expect(running.code, JSON.stringify(running.report)).toBe(0);
    expect((await run('systemctl', ['is-active', 'mhsvc.service'])).stdout.trim()).toBe('active');
    expect(await sh('cat /var/lib/mhsvc-started')).toBe('started');

    // Dropped, the service is stopped and the package removed.
    const gone = await inside.apply([], { state, sequence: 3 });
    expect(gone.code, JSON.stringify(gone.report)).toBe(0);
    expect(await installed('mhsvc')).toBe('');
  }, 180_000);
});
