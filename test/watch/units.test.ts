import { describe, expect, it } from 'vitest';
import { systemdManager } from '../../src/machine/services/systemd.js';
import { silentLogger } from '../../src/core/system/log.js';
import type { Finding } from '../../src/engine/converge/watch-finding.js';
import { unitProbe } from '../../src/kinds/service/unit-probe.js';
import { watchUnits } from '../../src/kinds/service/unit-watch.js';
import { containerUnavailable, startSystemdContainer } from '../support/systemd-container.js';
import { useContainer } from '../support/container-block.js';

const unavailable = containerUnavailable();
describe.skipIf(unavailable !== undefined && !process.env.CI)(`the unit watcher on a real systemd${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const box = useContainer(() => startSystemdContainer());

  async function unit(name: string, service: string): Promise<void> {
    const body = `[Unit]\nDescription=${name}\n\n[Service]\nExecStart=/bin/sleep infinity\n${service}\n`;
    const r = await box.container.exec('/bin/sh', ['-c', `printf '%s' '${body}' > /etc/systemd/system/${name}.service && systemctl daemon-reload && systemctl start ${name}.service`]);
    expect(r.code, r.stderr).toBe(0);
  }

  it('a unit killed by hand, one stopped by hand and one restarted by its manager are each said within 5 s; a quiet unit is not', async () => {
    await unit('crashes', 'Restart=no');
    await unit('stopped', 'Restart=no');
    await unit('revives', 'Restart=always\nRestartSec=100ms');
    await unit('quiet', 'Restart=no');
    const found: Array<Finding & { looksAfter: number }> = [];
    let since = 0;
    const units = ['crashes.service', 'stopped.service', 'revives.service', 'quiet.service'];
    let looks = 0;
    // The container's /run, where its systemd keeps the invocation links, seen from here.
    const manager = systemdManager(box.container.runner);
    let fullLooks = 0;
    const probe = unitProbe({ ...manager, query: (u) => (fullLooks++, manager.query(u)) }, `/proc/${box.container.initPid}/root`);
    const watcher = watchUnits({ units, probe: async (u) => (looks++, probe(u)), onFound: (f) => found.push(...f.map((x) => ({ ...x, looksAfter: looks - since }))), log: silentLogger() });
    try {
      // The first look is the baseline; quiet looks read only systemd's invocation links, no process.
      while (looks < 4) await new Promise((r) => setTimeout(r, 50));
      expect(fullLooks).toBe(1);
      // Then each unit is disturbed by hand, one at a time.
      const disturb = async (what: string, command: string[], unitName: string, expected: RegExp) => {
        since = looks;
        const r = await box.container.exec('systemctl', command);
        expect(r.code, r.stderr).toBe(0);
        const deadline = Date.now() + 15_000;
        while (!found.some((f) => f.target === unitName)) {
          if (Date.now() > deadline) throw new Error(`${what}: not said; found ${JSON.stringify(found)}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        const f = found.find((x) => x.target === unitName)!;
        expect(f.message).toMatch(expected);
        // Said by the first or second look after the act: looks are 2 s apart, so within 5 s on a machine
        // that is not starved (counted in looks, not timed, so that a loaded machine does not fail it).
        expect(f.looksAfter).toBeLessThanOrEqual(2);
      };
      // Kills the main process, each unit's only one: a kill of the whole control group at times fails with EIO inside the container.
      await disturb('a kill', ['kill', '--kill-whom=main', '-s', 'KILL', 'crashes.service'], 'crashes.service', /^crashes\.service was failed$/);
      await disturb('a stop', ['stop', 'stopped.service'], 'stopped.service', /^stopped\.service was inactive \(dead\)$/);
      await disturb('a kill under Restart=always', ['kill', '--kill-whom=main', '-s', 'KILL', 'revives.service'], 'revives.service', /^revives\.service was (restarted by its manager \(1 automatic restart\)|activating.*|failed.*)$/);
      expect(found.filter((f) => f.target === 'quiet.service')).toEqual([]);
    } finally {
      watcher.close();
    }
  });

  it('a unit the apply left running and killed before the watcher\'s first look is said at that first look; one the apply left failed is not', async () => {
    await unit('gap', 'Restart=no');
    await unit('born-broken', 'Restart=no');
    const manager = systemdManager(box.container.runner);
    const units = ['gap.service', 'born-broken.service'];
    const stop = await box.container.exec('systemctl', ['kill', '--kill-whom=main', '-s', 'KILL', 'born-broken.service']);
    expect(stop.code, stop.stderr).toBe(0);
    const settled = async (name: string, state: string) => {
      for (const deadline = Date.now() + 15_000; (await manager.query([name])).get(name)?.activeState !== state; await new Promise((r) => setTimeout(r, 50))) {
        if (Date.now() > deadline) throw new Error(`${name} never became ${state}`);
      }
    };
    await settled('born-broken.service', 'failed');
    // What an apply's second look would have seen: gap running, born-broken failed.
    const left = await manager.query(units);
    expect(left.get('gap.service')?.activeState).toBe('active');
    // Killed in the moment between that look and the watcher's first, and systemd has said so before the watcher looks.
    const kill = await box.container.exec('systemctl', ['kill', '--kill-whom=main', '-s', 'KILL', 'gap.service']);
    expect(kill.code, kill.stderr).toBe(0);
    await settled('gap.service', 'failed');
    const found: Finding[] = [];
    let watching!: () => void;
    const watched = new Promise<void>((resolve) => (watching = resolve));
    const watcher = watchUnits({ units, left, probe: unitProbe(manager, `/proc/${box.container.initPid}/root`), onFound: (f) => found.push(...f), onWatching: () => watching(), log: silentLogger() });
    try {
      await watched;
      expect(found).toEqual([{ kind: 'unit', target: 'gap.service', message: 'gap.service was failed' }]);
    } finally {
      watcher.close();
    }
  });
});
