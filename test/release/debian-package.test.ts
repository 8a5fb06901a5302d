import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { projectDir } from '../support/cli.js';
import { freshMachine, freshMachineUnavailable, type FreshMachine } from '../support/fresh-debian.js';
import { releaseBuild } from '../support/releases.js';
import { scratch } from '../support/tree.js';

/**
 * The Debian package the release builds (scripts/deb.mjs), in a fresh Debian 12 root made by mmdebstrap
 * (cached, each machine an overlay over it) whose policy-rc.d forbids every start, as container images'
 * does: installed by apt beside an operator's configuration, which it keeps; not started; upgraded from
 * the previous build's package, an operator's edit of its conffile kept; removed, the state kept; purged,
 * only what it owns gone. lintian finds no error in it. The packages are gzip -1 (the release's are xz):
 * the same files, made in seconds.
 */
const unavailable = freshMachineUnavailable() ?? (spawnSync('lintian', ['--version']).error ? 'lintian is not installed (scripts/setup-tests.sh)' : undefined);

describe.skipIf(unavailable !== undefined && !process.env.CI)(`the Debian package${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let work: ReturnType<typeof scratch>;
  let machine: FreshMachine;
  let lintian: Promise<{ code: number | null; out: string }>;
  const debs = () => join(work.dir, 'debs');
  // apt takes a package file by its path (./ or /); copied first, where apt's own user can read it.
  const deb = (version: string) => `$(cp /debs/mesh-host_${version}_amd64.deb /tmp/ && echo /tmp/mesh-host_${version}_amd64.deb)`;

  beforeAll(async () => {
    work = scratch('mesh-host-deb-');
    const packaged = (executable: string, version: string, arch: string) => {
      const made = spawnSync(process.execPath, ['scripts/deb.mjs', '--executable', executable, '--version', version, '--arch', arch, '--out', debs(), '--compression', 'gzip', '--level', '1'], { cwd: projectDir, encoding: 'utf8' });
      expect(made.status, made.stderr).toBe(0);
    };
    for (const version of ['0.1.0', '0.2.0']) packaged(releaseBuild(version), version, 'amd64');
    packaged(releaseBuild('0.2.0', undefined, 'arm64'), '0.2.0', 'arm64');
    // lintian reads the whole executable (some 40 s): it runs while the machine is used.
    lintian = new Promise((resolve) => {
      const child = spawn('lintian', ['--no-tag-display-limit', join(debs(), 'mesh-host_0.2.0_amd64.deb')], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      child.once('close', (code) => resolve({ code, out }));
    });
    machine = freshMachine();
  }, 900_000);
  afterAll(async () => {
    await lintian?.catch(() => undefined);
    machine?.dispose();
    work?.cleanup();
  });

  const inside = async (script: string) => {
    const r = await machine.run(`set -eu\n${script}`, { readOnlyBinds: [`${debs()}:/debs`], timeoutMs: 120_000 });
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    return r;
  };

  it('installs beside an existing configuration, keeps it, and does not start where policy-rc.d forbids', async () => {
    const r = await inside(`
      mkdir -p /etc/mesh-host && echo '{"operator": "mine"}' > /etc/mesh-host/host.json
      apt-get install -y ${deb('0.1.0')} >/tmp/apt.log 2>&1
      mesh-host --version; meshctl --version
      cat /etc/mesh-host/host.json
      stat -c '%a %n' /var/lib/mesh-host
      readlink /etc/systemd/system/multi-user.target.wants/mesh-host.service
      grep '^ExecStart=' /lib/systemd/system/mesh-host.service
      zcat /usr/share/man/man1/mesh-host.1.gz | grep -c '^\\.SH'
      zcat /usr/share/man/man1/meshctl.1.gz | head -1
      if for p in /proc/[0-9]*; do readlink "$p/exe"; done | grep -q '^/usr/bin/mesh-host$'; then echo started; else echo 'not running'; fi
      grep -o 'policy-rc.d denied execution of [a-z]*' /tmp/apt.log
    `);
    const out = r.stdout.split('\n');
    expect(out[0]).toMatch(/^mesh-host 0\.1\.0 \(commit /);
    expect(out[1]).toMatch(/^meshctl 0\.1\.0 /);
    expect(out[2]).toBe('{"operator": "mine"}');
    expect(out[3]).toBe('700 /var/lib/mesh-host');
    expect(out[4]).toBe('/lib/systemd/system/mesh-host.service');
    expect(out[5]).toBe('ExecStart=/usr/bin/mesh-host run');
    expect(Number(out[6])).toBeGreaterThan(3);
    expect(out[7]).toMatch(/^\.TH MESHCTL 1 /);
    expect(out[8]).toBe('not running');
    // The host is enrolled (its configuration is there): the postinst asked to start it, and was refused.
    expect(out[9]).toBe('policy-rc.d denied execution of start');
  }, 300_000);

  it('upgrades from the previous build, keeping the configuration and an edited conffile', async () => {
    const r = await inside(`
      echo '# the operator was here' >> /etc/init.d/mesh-host
      echo 'state' > /var/lib/mesh-host/kept
      apt-get install -y -o Dpkg::Options::=--force-confold ${deb('0.2.0')} >/tmp/apt.log 2>&1
      mesh-host --version
      cat /etc/mesh-host/host.json
      tail -1 /etc/init.d/mesh-host
      dpkg-query -W -f '\${Version}\\n' mesh-host
      grep -o 'policy-rc.d denied execution of [a-z]*' /tmp/apt.log
    `);
    expect(r.stdout.split('\n').slice(0, 6)).toEqual([expect.stringMatching(/^mesh-host 0\.2\.0 /), '{"operator": "mine"}', '# the operator was here', '0.2.0', 'policy-rc.d denied execution of stop', 'policy-rc.d denied execution of restart']);
  }, 300_000);

  it('remove keeps the state and configuration; purge removes only what the package owns', async () => {
    const removed = await inside(`
      apt-get remove -y mesh-host >/dev/null
      if [ -e /usr/bin/mesh-host ] || [ -e /usr/bin/meshctl ]; then echo 'still there'; else echo gone; fi
      cat /var/lib/mesh-host/kept /etc/mesh-host/host.json
      dpkg-query -W -f '\${db:Status-Abbrev}\\n' mesh-host
    `);
    expect(removed.stdout.split('\n').slice(0, 4)).toEqual(['gone', 'state', '{"operator": "mine"}', 'rc ']);

    const purged = await inside(`
      echo 0.2.0 > /etc/mesh-host/release
      apt-get purge -y mesh-host >/dev/null
      for f in /var/lib/mesh-host /etc/mesh-host/host.json /etc/init.d/mesh-host /lib/systemd/system/mesh-host.service /etc/systemd/system/multi-user.target.wants/mesh-host.service; do
        if [ -e "$f" ] || [ -L "$f" ]; then echo "left $f"; fi
      done
      cat /etc/mesh-host/release
      dpkg-query -W mesh-host 2>/dev/null || echo 'not known'
    `);
    // A file a declaration put in the configuration's folder is not the package's: it and its folder stay.
    expect(purged.stdout.trim().split('\n')).toEqual(['0.2.0', 'not known']);
  }, 300_000);

  /**
   * The arm64 package in the same fresh root, as a foreign architecture (dpkg --add-architecture, arm64's
   * C libraries from Debian's mirror): apt installs it with its dependencies, its maintainer scripts run,
   * and the executable it installed runs under qemu-user-static (carried in read-only) with the root's
   * own arm64 libraries, as mesh-host and, through its link, as meshctl; remove and purge as on amd64.
   */
  it('the arm64 package installs, runs under emulation, is removed and purged', async () => {
    const qemu = spawnSync('sh', ['-c', 'command -v qemu-aarch64-static'], { encoding: 'utf8' }).stdout.trim();
    expect(qemu, 'qemu-aarch64-static is installed (scripts/setup-tests.sh)').not.toBe('');
    const r = await machine.run(
      [
        'set -eu',
        'dpkg --add-architecture arm64',
        'apt-get update -qq >/dev/null',
        'cp /debs/mesh-host_0.2.0_arm64.deb /tmp/',
        'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/mesh-host_0.2.0_arm64.deb >/dev/null',
        "dpkg-query -W -f='${Package}:${Architecture} ${Version} ${Status}\\n' mesh-host",
        '/qemu/qemu-aarch64-static -L / /usr/bin/mesh-host --version',
        '/qemu/qemu-aarch64-static -L / /usr/bin/meshctl --version',
        'test -d /var/lib/mesh-host && echo state',
        'apt-get purge -y -qq mesh-host >/dev/null',
        "dpkg-query -W -f='${Status}\\n' mesh-host 2>/dev/null || echo 'not known'",
        'test -e /usr/bin/mesh-host || echo gone',
      ].join('\n'),
      { readOnlyBinds: [`${debs()}:/debs`, `${qemu}:/qemu/qemu-aarch64-static`], timeoutMs: 600_000 },
    );
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    const out = r.stdout.trim().split('\n');
    expect(out[0]).toBe('mesh-host:arm64 0.2.0 install ok installed');
    expect(out[1]).toMatch(/^mesh-host 0\.2\.0 /);
    expect(out[2]).toMatch(/^meshctl 0\.2\.0 |^mesh-host 0\.2\.0 /);
    expect(out.slice(3)).toEqual(['state', 'not known', 'gone']);
  }, 900_000);

  it('lintian finds no error', async () => {
    const { code, out } = await lintian;
    expect(out.split('\n').filter((l) => /^E: /.test(l))).toEqual([]);
    expect(code, out).toBe(0);
  }, 300_000);
});
