import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { reportSubject } from '../../src/link/wire.js';
import type { Report } from '../../src/engine/report/report.js';
import { runCli } from '../support/cli.js';
import { control } from '../support/daemon.js';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';

const unavailable = natsUnavailable();

/** Resolves when check() holds, polled on the event it watches; a timeout names what was awaited. */
async function until(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe.skipIf(unavailable !== undefined && !process.env.CI)(`a report made by hand while the daemon serves, against a real nats-server${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const mesh = useMesh();

  it("reaches the mesh in sequence order with the daemon's own, exactly once, while the daemon makes its own reports", async () => {
    const h = await mesh.enrol();
    await h.waitForReports(1);
    // Every report as it is published, in the order it crossed the wire, and when it first did.
    const nc = await control([mesh.server.url]);
    const wire: Array<{ sequence: number; trigger: string; at: number }> = [];
    const sub = nc.subscribe(reportSubject(h.node), {
      callback: (_e, m) => {
        const r = JSON.parse(m.string()) as Report;
        wire.push({ sequence: r.sequence, trigger: r.trigger, at: Date.now() });
      },
    });
    await nc.flush();
    const firstArrival = (sequence: number) => wire.find((w) => w.sequence === sequence);

    const ROUNDS = 6;
    const handRun: Array<{ sequence: number; exitedAt: number; finishedAt: string }> = [];
    for (let i = 1; i <= ROUNDS; i++) {
      // The daemon's own report: its footprint watcher sees the bundle's directory gone and repairs it,
      // while the hand-run apply below takes the lock between the daemon's applies.
      rmSync(join(h.root, 'srv/app'), { recursive: true, force: true });
      const file = join(h.dir, `hand-${i}.json`);
      // Cumulative: each hand-run declaration keeps the directories of the ones before it.
      const resources = Array.from({ length: i }, (_, k) => ({ type: 'directory', id: `hand-${k + 1}`, path: `/srv/hand-${k + 1}` }));
      writeFileSync(file, JSON.stringify({ version: 1, node: h.node, mode: 'converged', sequence: 100 + i, resources }));
      const r = await runCli('mesh-host', ['apply', file, '--json', ...h.flags, '--log-level', 'warn'], { timeoutMs: 60_000 });
      const exitedAt = Date.now();
      expect(r.code, r.stderr).toBe(0);
      const { report } = JSON.parse(r.stdout) as { report: Report };
      expect(report).toMatchObject({ trigger: 'apply', outcome: 'converged' });
      handRun.push({ sequence: report.sequence, exitedAt, finishedAt: report.finishedAt });
      // The daemon is told by no one: it notices the report in the outbox and sends it.
      await until(() => firstArrival(report.sequence) !== undefined, `hand-run report ${report.sequence} on the wire`);
    }

    // Everything made has left: the outbox is empty and the stream holds each report once, in order.
    const made = () => (JSON.parse(readFileSync(join(h.state, 'state.json'), 'utf8')) as { reportSequence: number }).reportSequence;
    await until(() => readdirSync(join(h.state, 'outbox')).length === 0 && wire.some((w) => w.sequence === made()), 'the outbox emptied');
    // Read once: the daemon may make another report of its own meanwhile (a repair), which the stream
    // then holds too, after these.
    const total = made();
    const stream = await h.waitForReports(total);
    expect(stream.length).toBeGreaterThanOrEqual(total);
    expect(stream.map((r) => r.sequence)).toEqual(Array.from({ length: stream.length }, (_, k) => k + 1));
    for (const { sequence } of handRun) expect(stream[sequence - 1]).toMatchObject({ sequence, trigger: 'apply' });
    // The daemon's own reports are among them (its repairs), interleaved with the hand-run ones.
    expect(stream.some((r) => r.trigger === 'reconcile')).toBe(true);
    // On the wire, first arrivals come in sequence order: a hand-run report never overtakes an older
    // one nor is overtaken by a newer one.
    const seen = new Set<number>();
    const order = wire.filter((w) => (seen.has(w.sequence) ? false : (seen.add(w.sequence), true))).map((w) => w.sequence);
    expect(order).toEqual([...order].sort((a, b) => a - b));

    // The figure, logged (not asserted: speed belongs to the benchmarks): from the end of the command's
    // apply (its report's finishedAt, this machine's clock) to the report on the wire.
    const delays = handRun.map((x) => firstArrival(x.sequence)!.at - Date.parse(x.finishedAt));
    const beforeExit = handRun.filter((x) => firstArrival(x.sequence)!.at < x.exitedAt).length;
    console.log(`hand-run report to the mesh: median ${median(delays)} ms, max ${Math.max(...delays)} ms after its apply ended (${ROUNDS} reports, ${beforeExit} on the wire before the command had exited)`);
    sub.unsubscribe();
    await nc.close();
  }, 300_000);
});
