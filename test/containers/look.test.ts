import { beforeAll, describe, expect, it } from 'vitest';
import { container, PAUSE_MS, skip, unavailable, useContainerScene } from './scene.js';

/** A second in the nanoseconds an image config counts its health check's durations in. */
const SECOND_NS = 1e9;

describe.skipIf(skip)(`a started container is looked at again a moment later${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const scene = useContainerScene();
  let ref: string;
  beforeAll(async () => {
    ref = await scene.podman.pushImage('look');
  });

  it('a container that exits 0.3 s after its start fails the apply, naming it, its state, its exit code and its last log lines', async () => {
    const command = ['sh', '-c', 'for i in $(seq 1 30); do echo line $i; done; sleep 0.3; exit 7'];
    const report = await scene.report([container({ ref }, { command })]);
    expect(report.outcome).toBe('failed');
    expect(report.error?.resource).toBe('web');
    const message = report.error!.message;
    expect(message).toMatch(/^container web (was running at the first look and is not at the second|is not running right after it was started) \(exited, exit code 7, restarts 0\), seen \d+ ms after the start; the last 20 lines of its log:\n/);
    // Its last 20 lines, and only those.
    expect(message.split('\n').slice(1)).toEqual(Array.from({ length: 20 }, (_, i) => `line ${i + 11}`));
    expect(report.steps[0]!.status).toBe('failed');
  });

  it('a container the engine restarts between the looks has died, and fails', async () => {
    const report = await scene.report([container({ ref }, { command: ['sh', '-c', 'sleep 0.3; exit 1'], restart: 'always' })]);
    expect(report.outcome).toBe('failed');
    expect(report.error?.message).toMatch(/^container web (was restarted by the engine between the looks|is not running right after it was started|was running at the first look and is not at the second)/);
  });

  it('a container still running at the second look is accepted, after one pause', async () => {
    const started = Date.now();
    const report = await scene.report([container({ ref })]);
    expect(report.outcome, JSON.stringify(report)).toBe('converged');
    expect(Date.now() - started).toBeGreaterThanOrEqual(PAUSE_MS);
  });

  // Podman 4.3 runs an image's health check from systemd: starting the container makes a transient timer
  // and service (CONTAINER-ID.timer running `podman healthcheck run CONTAINER-ID`), which runs the first
  // check at once and then every interval. The suite's podman lives in a booted systemd container, so
  // the checks run there as on a host; without systemd podman runs none, and the health stays `starting`.
  it("a container whose health check has not passed yet (health starting, within the image's start period) is accepted, and the report says so", async () => {
    // Not ready until /tmp/ready exists: every check fails, and within the start period a failure does not count.
    const slow = await scene.podman.pushImage('health-slow', { healthcheck: { Test: ['CMD-SHELL', 'test -e /tmp/ready'], Interval: 60 * SECOND_NS, StartPeriod: 60 * SECOND_NS, Retries: 3 } });
    const report = await scene.report([container({ ref: slow })]);
    expect(report.outcome, JSON.stringify(report)).toBe('converged');
    expect(report.said).toContainEqual(expect.stringMatching(/^container web is running and its health check is still starting at the second look: accepted, as a unit still activating is \(running, health starting, exit code 0, restarts 0\)$/));
    // The engine does run the check (its first at once): it fails, and within the start period it stays starting.
    for (const started = Date.now(); (await scene.inspect('web', '{{len .State.Health.Log}}')) === '0'; await new Promise((r) => setTimeout(r, 200))) {
      if (Date.now() - started > 30_000) throw new Error('podman ran no health check within 30 s');
    }
    expect(await scene.inspect('web', '{{.State.Health.Status}} {{(index .State.Health.Log 0).ExitCode}}')).toBe('starting 1');
  });

  it('a container whose health check fails at once is unhealthy at the second look and fails the apply, naming it, its state, its health and what the check said', async () => {
    const sick = await scene.podman.pushImage('health-sick', { healthcheck: { Test: ['CMD-SHELL', 'echo "no answer on :8080"; exit 1'], Interval: 1 * SECOND_NS, Retries: 1 } });
    // The first check runs as the container starts, in a podman process of its own: a longer pause leaves
    // it time to end on a loaded machine (its verdict, not the pause, is what this test is about).
    scene.setPause(6000);
    const report = await scene.report([container({ ref: sick })]);
    expect(report.outcome).toBe('failed');
    expect(report.error?.resource).toBe('web');
    expect(report.error!.message).toMatch(/^container web is running but its health check fails (at the second look|right after it was started) \(running, health unhealthy, exit code 0, restarts 0\); its last health check said: no answer on :8080, seen \d+ ms after the start/);
    expect(report.steps[0]!.status).toBe('failed');
  });
});
