import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/core/system/log.js';
import type { Finding } from '../../src/engine/converge/watch-finding.js';
import { watchUnits, type UnitLook } from '../../src/kinds/service/unit-watch.js';

const up = (invocationId: string, nRestarts = 0): UnitLook => ({ activeState: 'active', subState: 'running', invocationId, nRestarts });
const failed: UnitLook = { activeState: 'failed', subState: 'failed', invocationId: '', nRestarts: 0 };

/** The watcher over a scripted probe: each look answers the next picture (the last one stays). */
async function firstLookFinds(units: string[], left: ReadonlyMap<string, UnitLook> | undefined, pictures: Array<Record<string, UnitLook>>): Promise<{ found: Finding[]; looks: number }> {
  const found: Finding[] = [];
  let looks = 0;
  let watching!: () => void;
  const watched = new Promise<void>((resolve) => (watching = resolve));
  const watcher = watchUnits({
    units,
    ...(left ? { left } : {}),
    probe: async () => new Map(Object.entries(pictures[Math.min(looks++, pictures.length - 1)]!)),
    onFound: (f) => found.push(...f),
    onWatching: () => watching(),
    intervalMs: 60_000,
    log: silentLogger(),
  });
  await watched;
  watcher.close();
  return { found, looks };
}

describe('the unit watcher starts from what the apply left', () => {
  it('a unit the apply left running and down by the first look is said at that look', async () => {
    const { found, looks } = await firstLookFinds(['a.service'], new Map([['a.service', up('inv-1')]]), [{ 'a.service': failed }]);
    expect(looks).toBe(1);
    expect(found).toEqual([{ kind: 'unit', target: 'a.service', message: 'a.service was failed' }]);
  });

  it('a unit restarted between the apply\'s look and the first look is said: by its manager, or as a new invocation', async () => {
    const left = new Map([['m.service', up('inv-1')], ['h.service', up('inv-7')]]);
    const { found } = await firstLookFinds(['m.service', 'h.service'], left, [{ 'm.service': up('inv-2', 1), 'h.service': up('inv-8') }]);
    expect(found.map((f) => f.message)).toEqual(['m.service was restarted by its manager (1 automatic restart)', 'h.service was restarted (a new invocation)']);
  });

  it('a unit the apply could not keep running is not news at the first look (no loop of reconciles); one it left running and still running is quiet', async () => {
    const left = new Map([['broken.service', failed], ['fine.service', up('inv-3')]]);
    const { found } = await firstLookFinds(['broken.service', 'fine.service'], left, [{ 'broken.service': failed, 'fine.service': up('inv-3') }]);
    expect(found).toEqual([]);
  });

  it('without what an apply left (the daemon just started), the first look is the baseline: a unit already down is not said', async () => {
    const { found } = await firstLookFinds(['a.service'], undefined, [{ 'a.service': failed }]);
    expect(found).toEqual([]);
  });

  it('a unit the apply did not read is taken as the first look finds it, the others compared', async () => {
    const { found } = await firstLookFinds(['new.service', 'a.service'], new Map([['a.service', up('inv-1')]]), [{ 'new.service': failed, 'a.service': failed }]);
    expect(found.map((f) => f.target)).toEqual(['a.service']);
  });
});
