import { beforeAll, describe, expect, it } from 'vitest';
import { container, PAUSE_MS, skip, unavailable, useContainerScene } from './scene.js';

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
});
