import { describe, expect, it } from 'vitest';
import { takeInventory, presentServiceManager } from '../../src/machine/inventory/inventory.js';
import { isPublicAddress } from '../../src/machine/inventory/net-links.js';
import { fakeRunner, said } from '../support/fake-runner.js';

const quiet = { ip: said('[]') };

describe('verdicts read what the tool says, not only how it exited', () => {
  it('systemd degraded with a non-zero exit is present', async () => {
    const inv = await takeInventory({ runner: fakeRunner({ ...quiet, systemctl: said('degraded\n', 1) }) });
    const systemd = inv.capabilities.serviceManager[0]!;
    expect(systemd).toMatchObject({ name: 'systemd', present: true, detail: 'degraded', method: 'systemctl is-system-running' });
    expect(presentServiceManager(inv)).toBe('systemd');
  });

  it('systemd running is present', async () => {
    const inv = await takeInventory({ runner: fakeRunner({ ...quiet, systemctl: said('running\n') }) });
    expect(inv.capabilities.serviceManager[0]).toMatchObject({ present: true, detail: 'running' });
  });

  it('"not booted with systemd" is absent, with that reason', async () => {
    const message = 'System has not been booted with systemd as init system (PID 1). Can\'t operate.';
    const inv = await takeInventory({ runner: fakeRunner({ ...quiet, systemctl: said('', 1, `${message}\nFailed to connect to bus: Host is down\n`) }) });
    expect(inv.capabilities.serviceManager[0]).toMatchObject({ present: false, reason: message });
    expect(presentServiceManager(inv)).toBeUndefined();
  });

  it('a docker client whose daemon is down is no runtime', async () => {
    const down = 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?';
    const inv = await takeInventory({ runner: fakeRunner({ ...quiet, docker: said('\n', 1, `${down}\n`) }) });
    const docker = inv.capabilities.containerRuntime[0]!;
    expect(docker.present).toBe(false);
    expect(docker.reason).toContain('daemon does not answer');
    expect(docker.reason).toContain(down);
  });

  it('a docker daemon that answers is present with its version', async () => {
    const inv = await takeInventory({ runner: fakeRunner({ ...quiet, docker: said('28.2.2\n') }) });
    expect(inv.capabilities.containerRuntime[0]).toMatchObject({ present: true, detail: '28.2.2' });
  });

  it('a missing binary is absent, saying it is not installed', async () => {
    const inv = await takeInventory({ runner: fakeRunner(quiet) });
    for (const verdicts of Object.values(inv.capabilities)) {
      for (const v of verdicts) {
        expect(v.present).toBe(false);
        expect(v.reason).toMatch(/is not installed/);
      }
    }
  });

  it('a probe that hangs is cut off after the bound and said so; the rest still answer', async () => {
    // The hung probe never answers: the inventory comes back only because it was cut off.
    const inv = await takeInventory({
      probeTimeoutMs: 150,
      runner: fakeRunner({ ...quiet, systemctl: 'hang', 'dpkg-query': said('dpkg 1.21.22\n') }),
    });
    expect(inv.capabilities.serviceManager[0]).toMatchObject({ present: false });
    expect(inv.capabilities.serviceManager[0]!.reason).toMatch(/did not answer within 150 ms and was cut off/);
    expect(inv.capabilities.packageDatabase[0]).toMatchObject({ present: true, detail: 'dpkg 1.21.22' });
  });

  it('nftables without the privilege is absent with the reason', async () => {
    const inv = await takeInventory({ runner: fakeRunner({ ...quiet, nft: said('', 1, 'Error: Operation not permitted\n') }) });
    expect(inv.capabilities.firewall[0]).toMatchObject({ present: false });
    expect(inv.capabilities.firewall[0]!.reason).toContain('Operation not permitted');
  });

  it('fail2ban answering pong is present', async () => {
    const inv = await takeInventory({ runner: fakeRunner({ ...quiet, 'fail2ban-client': said('Server replied: pong\n') }) });
    expect(inv.capabilities.intrusionPrevention[0]).toMatchObject({ present: true });
  });
});

describe('links', () => {
  it('marks a link facing outside by a public address or the default route', async () => {
    const addresses = JSON.stringify([
      { ifname: 'lo', operstate: 'UNKNOWN', addr_info: [{ family: 'inet', local: '127.0.0.1', prefixlen: 8, scope: 'host' }] },
      { ifname: 'eth0', operstate: 'UP', addr_info: [{ family: 'inet', local: '10.0.0.5', prefixlen: 24 }] },
      { ifname: 'eth1', operstate: 'UP', addr_info: [{ family: 'inet', local: '81.2.69.160', prefixlen: 28 }] },
      { ifname: 'wg0', operstate: 'UNKNOWN', addr_info: [{ family: 'inet6', local: 'fd00::5', prefixlen: 64 }] },
    ]);
    const runner = fakeRunner({
      ip: (args) =>
        args.includes('address')
          ? said(addresses)
          : args.includes('-6')
            ? said('[]')
            : said(JSON.stringify([{ dst: 'default', gateway: '10.0.0.1', dev: 'eth0' }])),
    });
    const { links } = await takeInventory({ runner });
    const byName = Object.fromEntries(links.links.map((l) => [l.name, l]));
    expect(byName.lo!.facesOutside).toBe(false);
    expect(byName.eth0).toMatchObject({ facesOutside: true, why: ['default route via 10.0.0.1'] });
    expect(byName.eth1).toMatchObject({ facesOutside: true, why: ['public address 81.2.69.160'] });
    expect(byName.wg0!.facesOutside).toBe(false);
  });

  it('a failed ip is a finding, not an abort', async () => {
    const { links } = await takeInventory({ runner: fakeRunner({}) });
    expect(links.links).toEqual([]);
    expect(links.reason).toMatch(/ip is not installed/);
  });

  it('tells public addresses from private and documentation ones', () => {
    expect(isPublicAddress('8.8.8.8')).toBe(true);
    expect(isPublicAddress('2a00:1450::1')).toBe(true);
    for (const a of ['10.1.2.3', '172.20.0.1', '192.168.1.1', '100.64.0.1', '169.254.1.1', '192.0.2.2', 'fd00::2', 'fe80::1', '::1']) {
      expect(isPublicAddress(a), a).toBe(false);
    }
  });
});
