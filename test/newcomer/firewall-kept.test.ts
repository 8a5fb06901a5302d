import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectDir } from '../support/cli.js';
import { startFirewallContainer } from '../support/firewall-container.js';
import { containerUnavailable, type SystemdContainer } from '../support/systemd-container.js';
import { scratch } from '../support/tree.js';

/**
 * README's two commands on a machine whose own firewall is on: ufw, or firewalld, enabled and running in
 * a booted systemd (a container with a private network, so that they filter nothing of this machine).
 * The test command's set-up (`bash scripts/setup-tests.sh`, what `scripts/test.sh` runs before the suite;
 * it runs `scripts/setup.sh`, the demo's set-up) and the demo (`bash scripts/try.sh`) leave it enabled
 * and running. One firewall a container, as a machine has one. The project is an overlay
 * over this checkout inside the container: the build they run writes nothing into the checkout.
 */
const unavailable = containerUnavailable();

/** A firewall on in the container, and how to read that it is: its unit enabled and active, and its own word. */
const FIREWALLS = {
  ufw: { turnOn: 'ufw --force enable >/dev/null && systemctl enable --now ufw.service 2>&1', unit: 'ufw.service', says: ['ufw', 'status'], on: 'Status: active' },
  firewalld: { turnOn: 'systemctl enable --now firewalld.service 2>&1', unit: 'firewalld.service', says: ['firewall-cmd', '--state'], on: 'running' },
} as const;

describe.skipIf(unavailable !== undefined && !process.env.CI)(`README's commands on a machine whose firewall is on${unavailable ? ` (cannot run: ${unavailable})` : ''}`, { timeout: 900_000 }, () => {
  describe.each(Object.entries(FIREWALLS))('%s enabled and running', (_name, firewall) => {
    let container: SystemdContainer;
    let work: ReturnType<typeof scratch>;
    let project: string;

    beforeAll(async () => {
      work = scratch('mesh-host-firewall-kept-');
      project = join(work.dir, 'project');
      for (const dir of ['upper', 'work', 'project']) mkdirSync(join(work.dir, dir));
      const mounted = spawnSync('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${projectDir.replace(/\/$/, '')},upperdir=${work.dir}/upper,workdir=${work.dir}/work`, project], { encoding: 'utf8' });
      if (mounted.status !== 0) throw new Error(`the project's overlay could not be mounted: ${mounted.stderr}`);
      container = await startFirewallContainer(join(work.dir, 'ct'), {
        binds: [`${project}:/root/mesh-host`],
        // What dpkg says is installed here, so that set-up finds the packages it looks for by name.
        readOnlyBinds: ['/var/lib/dpkg'],
        // podman's socket would answer the demo from an /etc without podman's configuration: no engine here.
        initArgs: ['systemd.mask=podman.socket', 'systemd.mask=podman.service'],
      });
      await sh(firewall.turnOn);
    }, 300_000);
    afterAll(async () => {
      await container?.stop();
      if (project) spawnSync('umount', [project]);
      work?.cleanup();
    });

    async function sh(command: string, timeoutMs = 60_000): Promise<string> {
      const r = await container.exec('/bin/bash', ['-c', command], timeoutMs);
      if (r.code !== 0) throw new Error(`${command}: exit ${r.code}: ${r.failure?.message ?? ''}\n${r.stdout}\n${r.stderr}`);
      return r.stdout.trim();
    }

    /** The unit's state and the firewall's own word, once it has come up (waited on: it answers when it is). */
    async function state(): Promise<{ unit: string; says: string }> {
      const says = async () => (await container.exec(firewall.says[0], [...firewall.says.slice(1)])).stdout.split('\n')[0]!.trim();
      for (const deadline = Date.now() + 60_000; Date.now() < deadline && (await says()) !== firewall.on; ) await new Promise((r) => setTimeout(r, 200));
      return { unit: await sh(`systemctl show -p ActiveState -p UnitFileState --value ${firewall.unit} | paste -sd' '`), says: await says() };
    }
    const on = { unit: 'active enabled', says: firewall.on };

    it('is on before either command runs', async () => {
      expect(await state()).toEqual(on);
    });

    it("bash scripts/setup-tests.sh (the test command's set-up, which runs the demo's set-up and build) leaves it enabled and running", async () => {
      await sh('cd /root/mesh-host && bash scripts/setup-tests.sh >/tmp/setup.out 2>&1 || { tail -n 60 /tmp/setup.out; exit 1; }', 600_000);
      expect(await state()).toEqual(on);
    });

    it('the demo itself (bash scripts/try.sh, its set-up done) runs to its end and leaves it enabled and running', async () => {
      // Its output lands in the overlay's upper folder, read from here when it fails.
      const run = await container.exec('/bin/bash', ['-c', 'cd /root/mesh-host && MESH_HOST_SETUP_DONE=1 bash scripts/try.sh </dev/null >.try.out 2>&1'], 300_000);
      expect(run.code, readFileSync(join(work.dir, 'upper/.try.out'), 'utf8').split('\n').slice(-40).join('\n')).toBe(0);
      expect(await state()).toEqual(on);
    });
  });
});
