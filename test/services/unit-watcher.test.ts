import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { unitWatcherMachine, type Look } from '../../machines/unit-watcher.js';

const look = (over: Partial<Look>): Look => ({ activeState: 'active', subState: 'running', result: 'success', invocationId: 'a', nRestarts: 0, job: false, sinceActionMs: 0, ...over });

/** The verdict of the two looks at a unit the apply acted on. */
function verdict(action: 'start' | 'restart' | 'reload', first: Look, second?: Look) {
  const watcher = createActor(unitWatcherMachine, { input: { unit: 'app.service', action } }).start();
  watcher.send({ type: 'FIRST_LOOK', look: first });
  if (second) watcher.send({ type: 'SECOND_LOOK', look: second });
  return { status: watcher.getSnapshot().status, output: watcher.getSnapshot().output };
}

describe('the two looks at a unit the apply acted on', () => {
  it('a restart still stopping at the first look, its job queued, is under way: a running unit at the second look is accepted', () => {
    const first = look({ activeState: 'deactivating', subState: 'stop-sigterm', job: true, sinceActionMs: 156 });
    expect(verdict('restart', first, look({ invocationId: 'b', sinceActionMs: 1500 }))).toEqual({ status: 'done', output: { accepted: true, unit: 'app.service' } });
  });

  it('a restart caught between its stop and its start (inactive or failed, the job queued) is under way as well', () => {
    for (const activeState of ['inactive', 'failed']) {
      expect(verdict('restart', look({ activeState, subState: 'dead', job: true }), look({ sinceActionMs: 1500 })).output).toEqual({ accepted: true, unit: 'app.service' });
    }
  });

  it('a unit stopping with no job of ours queued is not on its way up: it fails at once, its state named', () => {
    const out = verdict('restart', look({ activeState: 'deactivating', subState: 'stop-sigterm', job: false, sinceActionMs: 40 }));
    expect(out.status).toBe('done');
    expect(out.output).toEqual({ accepted: false, unit: 'app.service', message: 'app.service is not running right after restart (ActiveState=deactivating, SubState=stop-sigterm, Result=success, seen 40 ms after the action)' });
  });

  it('a restart under way at the first look and not up at the second fails, naming both looks', () => {
    const out = verdict('restart', look({ activeState: 'deactivating', job: true }), look({ activeState: 'failed', subState: 'failed', result: 'exit-code', sinceActionMs: 1500 }));
    expect(out.output).toMatchObject({ accepted: false, message: expect.stringMatching(/^app\.service was starting at the first look and is not at the second \(ActiveState=failed/) });
  });
});

describe('a restart whose job had not begun at the first look', () => {
  it('is the run before, still up: a new run at the second look is the restart asked for, accepted', () => {
    const first = look({ invocationId: 'a', job: true, sinceActionMs: 30 });
    expect(verdict('restart', first, look({ invocationId: 'b', sinceActionMs: 1500 })).output).toEqual({ accepted: true, unit: 'app.service' });
  });

  it('is still failed when the service manager restarted the new run on its own', () => {
    const out = verdict('restart', look({ invocationId: 'a', job: true }), look({ invocationId: 'c', nRestarts: 1, sinceActionMs: 1500 }));
    expect(out.output).toMatchObject({ accepted: false, message: expect.stringMatching(/^app\.service was restarted by the service manager 1 times between the looks/) });
  });

  it('does not excuse a reload: a reload keeps its run, so another invocation at the second look is a death', () => {
    const out = verdict('reload', look({ activeState: 'reloading', invocationId: 'a', job: true }), look({ invocationId: 'b', sinceActionMs: 1500 }));
    expect(out.output).toMatchObject({ accepted: false, message: expect.stringMatching(/^app\.service was restarted by the service manager 1 times between the looks/) });
  });
});

describe('a run that began and was replaced between the looks', () => {
  it('is still caught when the first look saw the action\'s own run up', () => {
    const out = verdict('restart', look({ invocationId: 'b', sinceActionMs: 20 }), look({ invocationId: 'c', sinceActionMs: 1500 }));
    expect(out.output).toMatchObject({ accepted: false, message: expect.stringMatching(/^app\.service was restarted by the service manager 1 times between the looks/) });
  });
});
