import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Declaration, Resource } from '../../src/core/declaration/schema.js';
import { projectDir } from '../support/cli.js';
import { systemRunner, type CommandRunner } from '../../src/core/system/runner.js';
import { declaration, reportOf, testHost, type TestHost } from '../support/host.js';
import { receiveDeclaration } from '../../src/core/declaration/load.js';
import { previewDeclaration } from '../../src/engine/apply/plan-preview.js';
import { formatFleetPlan } from '../../src/control/fleet/plan-view.js';
import { packageRoot, type PackageRoot, type TestPackage } from '../support/package-repo.js';

/**
 * Packages against Debian's own dpkg and apt, in a Debian root reading only a local repository of
 * packages built here with dpkg-deb. The Debian tree is mmdebstrap's, made once and cached at
 * freshTreePath() (the temporary folder, named by a digest of what goes in; the newcomer tests share
 * it); this file lays its repository over it once, and each case gets a new overlay on top, so a case
 * costs a mount, never a copy or a debootstrap.
 */

// What a postinst of a service package does on Debian: start it through invoke-rc.d, which asks
// policy-rc.d first. It writes down what policy-rc.d answered while it ran.
const SERVICE_POSTINST = `#!/bin/sh
set -e
if [ "$1" = configure ]; then
  if [ -x /usr/sbin/policy-rc.d ]; then /usr/sbin/policy-rc.d mhsvc start && echo $? > /var/lib/mhsvc-policy || echo $? > /var/lib/mhsvc-policy; else echo none > /var/lib/mhsvc-policy; fi
  invoke-rc.d mhsvc start || true
fi
`;

const PACKAGES: TestPackage[] = [
  { name: 'mhdemo', version: '1.0-1' },
  { name: 'mhdemo', version: '2.0-1' },
  { name: 'mhdep', version: '1.0-1' },
  { name: 'mhapp', version: '1.0-1', depends: 'mhdep (>= 1.0)' },
  { name: 'mhunmet', version: '1.0-1', depends: 'mhmissing' },
  { name: 'mhfail', version: '1.0-1', postinst: '#!/bin/sh\necho "mhfail: cannot configure" >&2\nexit 1\n' },
  {
    name: 'mhsvc',
    version: '1.0-1',
    postinst: SERVICE_POSTINST,
    files: { 'etc/init.d/mhsvc': { text: '#!/bin/sh\necho started > /var/lib/mhsvc-started\n', mode: 0o755 } },
  },
];

let machine: PackageRoot;
let host: TestHost;
let sequence = 0;

beforeAll(() => {
  machine = packageRoot(PACKAGES);
}, 900_000);
afterAll(() => machine?.dispose());
beforeEach(() => {
  machine.reset();
  host?.cleanup();
  host = testHost({ kinds: { runner: systemRunner() } });
  host.env.root = machine.root;
  sequence = 0;
});

const pkg = (name: string, version: string, extra: object = {}): Resource => ({ type: 'package', id: `pkg-${name}`, name, version, ...extra }) as Resource;
const apply = async (resources: Resource[], extra: object = {}) => host.apply(declaration(resources, { sequence: ++sequence, ...extra }));
/** What dpkg says of a package in the root: `version status`, or nothing. */
const installed = (name: string): string => {
  try {
    return machine.inside('dpkg-query', ['-W', '-f', '${Version} ${db:Status-Abbrev}', name]).trim();
  } catch {
    return '';
  }
};
/** Installs a package's file with dpkg itself, as the machine had it before the host came. */
const foundHere = (name: string, version: string) => machine.inside('dpkg', ['-i', `${machine.repo}/${name}_${version}_all.deb`]);
const stepsOf = (report: { steps: Array<{ resource: string; status: string; actions: readonly string[]; detail?: string }> }) => report.steps.map((s) => `${s.resource}:${s.status}:${s.actions.join(',')}`);

describe('packages in a Debian root, through its own apt and dpkg', () => {
  it('installs pinned versions and a dependency in one transaction, upgrades, downgrades and removes, and finds them as declared after', async () => {
    const first = reportOf(await apply([pkg('mhdemo', '1.0-1'), pkg('mhapp', 'present')]));
    expect(first.outcome, JSON.stringify(first)).toBe('converged');
    expect(stepsOf(first)).toEqual(['pkg-mhdemo:done:create,install 1.0-1,also installs mhdep 1.0-1', 'pkg-mhapp:done:create,install 1.0-1']);
    expect([installed('mhdemo'), installed('mhapp'), installed('mhdep')]).toEqual(['1.0-1 ii', '1.0-1 ii', '1.0-1 ii']);
    expect(first.said).toContain('2 packages read back from the package database at the second look');
    // One transaction: dpkg's log has one apt run's start.
    expect(readFileSync(join(machine.root, 'var/log/apt/history.log'), 'utf8').match(/^Start-Date/gm)).toHaveLength(1);

    const again = reportOf(await apply([pkg('mhdemo', '1.0-1'), pkg('mhapp', 'present')]));
    expect(again.steps.filter((s) => s.status !== 'unchanged')).toEqual([]);

    const up = reportOf(await apply([pkg('mhdemo', '2.0-1'), pkg('mhapp', 'present')]));
    expect(stepsOf(up)).toEqual(['pkg-mhdemo:done:upgrade 1.0-1→2.0-1', 'pkg-mhapp:unchanged:']);
    expect(installed('mhdemo')).toBe('2.0-1 ii');

    const down = reportOf(await apply([pkg('mhdemo', '1.0-1'), pkg('mhapp', 'absent')]));
    expect(stepsOf(down)).toEqual(['pkg-mhdemo:done:downgrade 2.0-1→1.0-1', 'pkg-mhapp:done:remove 1.0-1']);
    expect([installed('mhdemo'), installed('mhapp')]).toEqual(['1.0-1 ii', '']);

    const gone = reportOf(await apply([]));
    expect(stepsOf(gone)).toEqual(['pkg-mhapp:done:remove', 'pkg-mhdemo:done:remove,remove 1.0-1']);
    expect(installed('mhdemo')).toBe('');
    expect(Object.keys(host.env.store.state.records)).toEqual([]);
  }, 120_000);

  it('holds a package found installed on an adopted machine, and removes one the declaration took when it is no longer declared', async () => {
    foundHere('mhdemo', '1.0-1');
    foundHere('mhdep', '1.0-1');
    const held = reportOf(await apply([pkg('mhdemo', '2.0-1'), pkg('mhdep', '1.0-1', { take: true })], { mode: 'adopted' }));
    expect(stepsOf(held)).toEqual(['pkg-mhdemo:held:hold', 'pkg-mhdep:done:take']);
    expect(held.steps[0]!.detail).toContain('installed at 1.0-1, declared 2.0-1');
    expect(installed('mhdemo')).toBe('1.0-1 ii');
    expect(host.env.store.state.records['pkg-mhdep']!.package).toEqual({ found: '1.0-1', taken: true });
    const dropped = reportOf(await apply([], { mode: 'adopted' }));
    expect(stepsOf(dropped)).toEqual(['pkg-mhdep:done:remove,remove 1.0-1']);
    expect([installed('mhdemo'), installed('mhdep')]).toEqual(['1.0-1 ii', '']);
  }, 120_000);

  it('upgrades a package found installed on a converged machine, and gives the version found back when it is no longer declared', async () => {
    foundHere('mhdemo', '1.0-1');
    const taken = reportOf(await apply([pkg('mhdemo', '2.0-1')]));
    expect(stepsOf(taken)).toEqual(['pkg-mhdemo:done:take,upgrade 1.0-1→2.0-1']);
    expect(host.env.store.state.records['pkg-mhdemo']!.package).toEqual({ found: '1.0-1' });
    expect(installed('mhdemo')).toBe('2.0-1 ii');
    const dropped = reportOf(await apply([]));
    expect(stepsOf(dropped)).toEqual(['pkg-mhdemo:done:original given back,downgrade 2.0-1→1.0-1']);
    expect(installed('mhdemo')).toBe('1.0-1 ii');
    expect(host.env.store.state.records['pkg-mhdemo']).toBeUndefined();
  }, 120_000);

  it('keeps a package found as declared when it is no longer declared, and says so when the version found is no longer offered', async () => {
    foundHere('mhdep', '1.0-1');
    expect(reportOf(await apply([pkg('mhdep', 'present')])).steps.map((s) => s.status)).toEqual(['unchanged']);
    expect(reportOf(await apply([])).steps).toEqual([]);
    expect(installed('mhdep')).toBe('1.0-1 ii');

    // Found at a version the repository no longer has (installed from a file): upgraded, and not given back.
    machine.inside('sh', ['-c', 'mkdir -p /tmp/old && cp /srv/repo/mhdemo_1.0-1_all.deb /tmp/old/ && dpkg-deb -R /tmp/old/mhdemo_1.0-1_all.deb /tmp/old/t && sed -i s/1.0-1/0.9-1/ /tmp/old/t/DEBIAN/control && dpkg-deb -b /tmp/old/t /tmp/old/mhdemo_0.9-1_all.deb >/dev/null && dpkg -i /tmp/old/mhdemo_0.9-1_all.deb >/dev/null']);
    expect(installed('mhdemo')).toBe('0.9-1 ii');
    expect(reportOf(await apply([pkg('mhdemo', '2.0-1')])).outcome).toBe('converged');
    const dropped = reportOf(await apply([]));
    expect(dropped.outcome).toBe('converged');
    expect(dropped.steps.map((s) => [s.status, s.actions.join(','), s.detail])).toEqual([['done', 'leave', 'could not give back version 0.9-1, found before the host: no repository offers it now; left at 2.0-1']]);
    expect(installed('mhdemo')).toBe('2.0-1 ii');
    expect(host.env.store.state.records['pkg-mhdemo']).toBeUndefined();
  }, 120_000);

  it('plans from apt’s own simulation, and predicts a version no repository offers and a dependency that cannot be met, touching nothing', async () => {
    foundHere('mhdemo', '1.0-1');
    const planned = await host.apply(declaration([pkg('mhdemo', '2.0-1'), pkg('mhapp', 'present')]), { dryRun: true });
    expect(planned.kind).toBe('planned');
    if (planned.kind !== 'planned') return;
    expect(planned.plan.steps.map((s) => `${s.verb}:${s.actions.join(',')}`)).toEqual(['take:take,upgrade 1.0-1→2.0-1,also installs mhdep 1.0-1', 'create:create,install 1.0-1']);
    expect(installed('mhdemo')).toBe('1.0-1 ii');
    expect(installed('mhapp')).toBe('');

    const missing = await host.apply(declaration([pkg('mhdemo', '3.0-1'), pkg('mhapp', 'present')]));
    expect(missing.kind).toBe('refused');
    expect(missing.kind === 'refused' ? missing.details : []).toEqual(['pkg-mhdemo (mhdemo): version 3.0-1 of mhdemo is offered by no repository this machine reads (offered: 2.0-1, 1.0-1)']);
    const unmet = await host.apply(declaration([pkg('mhunmet', 'present')]));
    expect(unmet.kind).toBe('refused');
    expect(JSON.stringify(unmet)).toContain('mhunmet : Depends: mhmissing but it is not installable');
    expect([installed('mhdemo'), installed('mhapp'), installed('mhunmet')]).toEqual(['1.0-1 ii', '', '']);
  }, 120_000);

  it('shows meshctl plan the package steps with their versions, and the version no repository offers as a refusal', async () => {
    foundHere('mhdemo', '1.0-1');
    // What a host answers meshctl plan (its dry run, as the answer sent back), and the lines meshctl prints of it.
    const ask = async (resources: Resource[]) => {
      const received = await receiveDeclaration(Buffer.from(JSON.stringify(declaration(resources))), { source: 'the test' });
      return previewDeclaration(host.env, received, { diff: false, limit: 1 << 20 });
    };
    const planned = await ask([pkg('mhdemo', '2.0-1'), pkg('mhapp', 'present')]);
    expect(formatFleetPlan([planned], '10s').split('\n')).toEqual([
      'plan for 1 node: 1 would change, 0 would not, 0 would refuse, 0 did not answer',
      '',
      '1 node:  create mhapp: install 1.0-1',
      '1 node:  take mhdemo: upgrade 1.0-1→2.0-1, also installs mhdep 1.0-1',
    ]);
    const missing = await ask([pkg('mhdemo', '3.0-1')]);
    expect(formatFleetPlan([missing], '10s').split('\n').slice(-2)).toEqual(['would refuse:', expect.stringMatching(/^ {2}test-node: .*pkg-mhdemo \(mhdemo\): version 3\.0-1 of mhdemo is offered by no repository this machine reads \(offered: 2\.0-1, 1\.0-1\)$/)]);
    expect([installed('mhdemo'), installed('mhapp')]).toEqual(['1.0-1 ii', '']);
  }, 120_000);

  it('fails a transaction whose maintainer script fails with apt’s words, and never calls it converged', async () => {
    const failed = reportOf(await apply([pkg('mhfail', '1.0-1')]));
    expect(failed.outcome).not.toBe('converged');
    const step = failed.steps.find((s) => s.resource === 'pkg-mhfail')!;
    expect(step.status).toBe('failed');
    expect(step.detail).toMatch(/apt-get install mhfail=1.0-1 failed \(exit 100\)/);
    expect(installed('mhfail')).toMatch(/^1.0-1 i[FU]/);
    // What the host half-installed is its own: removed when no longer declared.
    expect(host.env.store.state.records['pkg-mhfail']!.created).toBe(true);
  }, 120_000);

  it('refuses, at the plan, a transaction that would change a package held with apt-mark, with apt’s words', async () => {
    foundHere('mhdemo', '1.0-1');
    machine.inside('apt-mark', ['hold', 'mhdemo']);
    const held = await apply([pkg('mhdemo', '2.0-1')]);
    expect(held.kind).toBe('refused');
    expect(held.kind === 'refused' ? held.details : []).toEqual([
      "pkg-mhdemo (mhdemo): the transaction fails in apt-get's simulation: E: Held packages were changed and -y was used without --allow-change-held-packages.",
    ]);
    expect(installed('mhdemo')).toBe('1.0-1 hi');
  }, 120_000);

  it('fails the step whose package is not as declared at the second look, naming it', async () => {
    // Another hand installs 1.0-1 over what apt just installed, before the host reads the database back.
    const real = systemRunner();
    const meddling: CommandRunner = {
      async run(command, args, options) {
        const result = await real.run(command, args, options);
        if (args.includes('install') && !args.includes('-s')) await real.run('chroot', [machine.root, 'dpkg', '-i', `${machine.repo}/mhdemo_1.0-1_all.deb`]);
        return result;
      },
    };
    host.kinds({ runner: meddling });
    const report = reportOf(await apply([pkg('mhdemo', '2.0-1')]));
    expect(report.outcome).not.toBe('converged');
    expect(report.steps.map((s) => [s.resource, s.status, s.detail])).toEqual([['pkg-mhdemo', 'failed', 'package mhdemo is at version 1.0-1 at the second look, not 2.0-1']]);
  }, 120_000);

  it('keeps a package’s service from starting during the transaction, and puts the machine’s own policy-rc.d back after', async () => {
    // The machine's own policy allows every start.
    const policy = join(machine.root, 'usr/sbin/policy-rc.d');
    writeFileSync(policy, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    const report = reportOf(await apply([pkg('mhsvc', '1.0-1')]));
    expect(report.outcome, JSON.stringify(report)).toBe('converged');
    // While the postinst ran, policy-rc.d forbade the start (101), and invoke-rc.d did not start it.
    expect(readFileSync(join(machine.root, 'var/lib/mhsvc-policy'), 'utf8').trim()).toBe('101');
    expect(existsSync(join(machine.root, 'var/lib/mhsvc-started'))).toBe(false);
    expect(readFileSync(policy, 'utf8')).toBe('#!/bin/sh\nexit 0\n');
    expect(existsSync(`${policy}.mesh-host-aside`)).toBe(false);
    // With the machine's own policy back, the same start does start it: the test above could fail.
    machine.inside('invoke-rc.d', ['mhsvc', 'start']);
    expect(readFileSync(join(machine.root, 'var/lib/mhsvc-started'), 'utf8')).toBe('started\n');
  }, 120_000);
});

describe('the package manager found under a root', () => {
  it('is dpkg/apt in a Debian root, named with its versions, and none in a tree without dpkg, saying which it looked for', async () => {
    const { foundManager } = await import('../../src/kinds/package/package-managers.js');
    const debian = await foundManager(systemRunner())(machine.root);
    expect(typeof debian === 'string' ? debian : [debian.name, await debian.describe()]).toEqual(['dpkg/apt', expect.stringMatching(/^apt 2\.\S+, dpkg 1\.\S+$/)]);
    const empty = mkdtempSync(join(tmpdir(), 'mesh-host-no-packages-'));
    try {
      expect(await foundManager(systemRunner())(empty)).toBe(`no package manager this host drives is found under ${empty} (it drives dpkg/apt)`);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('the declaration of packages', () => {
  it('refuses a name or a version that is not Debian’s, and a package named twice, each at its JSON path', async () => {
    const { validateDeclaration } = await import('../../src/core/declaration/validate.js');
    const good = await validateDeclaration(declaration([pkg('mhdemo', '1:2.0~rc1-1+b2'), pkg('lib-x.y+z', 'present', { id: 'libxyz' }), pkg('nginx', 'absent')]));
    expect(good.ok ? [] : good.problems).toEqual([]);
    const bad = await validateDeclaration(declaration([pkg('Bad_Name', '1.0'), pkg('mhdemo', 'v1.0'), pkg('mhx', '1.0:2')]));
    expect(bad.ok ? [] : bad.problems.map((p) => `${p.path}: ${p.message}`)).toEqual([
      "/resources/0/name: 'Bad_Name' is not a Debian package name: at least two characters, lower-case letters, digits, + - and ., starting with a letter or digit",
      "/resources/1/version: 'v1.0' is not a Debian version ([epoch:]upstream[-revision], the upstream part starting with a digit), nor 'present' or 'absent'",
      "/resources/2/version: '1.0:2' is not a Debian version ([epoch:]upstream[-revision], the upstream part starting with a digit), nor 'present' or 'absent'",
    ]);
    // The example in fixtures: packages, the file of one and its service, in the vocabulary.
    const example = JSON.parse(readFileSync(join(projectDir, 'fixtures/declarations/example-packages.json'), 'utf8')) as Declaration;
    const checked = await validateDeclaration(example);
    expect(checked.ok ? [] : checked.problems).toEqual([]);
    expect(example.resources.filter((r) => r.type === 'package')).toHaveLength(3);
    const twice = await validateDeclaration(declaration([pkg('mhdemo', '1.0-1'), pkg('mhdemo', 'absent', { id: 'again' })]));
    expect(twice.ok ? [] : twice.problems.map((p) => `${p.path}: ${p.message}`)).toEqual(["/resources/1/name: package name 'mhdemo' is declared twice (first at /resources/0)"]);
  });
});
