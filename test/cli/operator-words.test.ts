import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { formatFleet } from '../../src/control/fleet/fleet-format.js';
import { fleetRows } from '../../src/control/fleet/fleet.js';
import { askedBy } from '../../src/host/commands/pause-command.js';
import { runCli } from '../support/cli.js';
import { scratch } from '../support/tree.js';

/** The words an operator reads: whose logs, who paused, which labels. */
describe("an operator's words", () => {
  it("meshctl's log lines are named meshctl, not mesh-host", async () => {
    const work = scratch();
    try {
      expect((await runCli('meshctl', ['keygen', '--out', join(work.dir, 'keys')])).code).toBe(0);
      const file = join(work.dir, 'd.json');
      writeFileSync(file, JSON.stringify({ version: 1, node: 'web-1', mode: 'converged', sequence: 1, resources: [] }));
      const run = await runCli('meshctl', ['bundle', file, '--key', join(work.dir, 'keys/operator.nk'), '--server', 'nats://127.0.0.1:4222', '--offline', '--out', join(work.dir, 'b.json')]);
      expect(run.code, run.stderr).toBe(0);
      const lines = run.stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { name: string; msg: string });
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line.name).toBe('meshctl');
    } finally {
      work.cleanup();
    }
  });

  it("a pause by a shell that names no user says the account's name, not its uid", () => {
    expect(askedBy({}, 0, () => 'root')).toBe('root');
    expect(askedBy({}, process.getuid?.())).toBe(userInfo().username);
    expect(askedBy({ SUDO_USER: 'alice', USER: 'root' }, 0)).toBe('alice');
    expect(askedBy({}, 4242, () => undefined)).toBe('uid 4242');
  });

  it('the fleet table has a labels column', () => {
    const now = Date.now();
    const rows = fleetRows({ nowMs: now, reports: [], heartbeats: [{ node: 'web-1', storedAtMs: now - 1000, beat: { reportSequence: 0, lastApplied: null, intervalMs: 30_000 } }], keys: [], enrolled: ['db-1'] });
    const labelled = rows.map((r) => ({ ...r, labels: (r.node === 'web-1' ? { site: 'a', role: 'web' } : {}) as Record<string, string> }));
    const lines = formatFleet(labelled).split('\n');
    expect(lines[1]).toMatch(/^NODE +LABELS +STATE /);
    expect(lines.find((l) => l.startsWith('web-1'))).toMatch(/^web-1 +role=web,site=a +waiting /);
    expect(lines.find((l) => l.startsWith('db-1'))).toMatch(/^db-1 +- +waiting /);
  });
});
