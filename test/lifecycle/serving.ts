import { afterEach, expect } from 'vitest';
import type { LoadedStore } from '../../machines/lifecycle.js';
import { Harness } from './harness.js';

/**
 * Named scenarios' start: a host serving, enrolled, adopted, with what its store keeps (a pause, steps
 * held off for a lock); every harness made is cleaned up after its test.
 */
export function servingHosts(): (more?: Partial<LoadedStore>, options?: ConstructorParameters<typeof Harness>[0]) => Promise<Harness> {
  const harnesses: Harness[] = [];
  afterEach(() => harnesses.splice(0).forEach((h) => h.cleanup()));
  return async (more = {}, options = {}) => {
    const h = new Harness(options);
    harnesses.push(h);
    h.start();
    await h.settle();
    h.notePause(more.paused);
    h.deferredTold = more.deferred ?? [];
    h.loadStore!.resolve({ enrolled: true, mode: 'adopted', ...more });
    await h.settle();
    expect(h.snapshot().matches('serving')).toBe(true);
    return h;
  };
}

/** One step of a scenario, the invariants checked after it. */
export async function step(h: Harness, fn: () => void): Promise<void> {
  fn();
  await h.settle();
  expect(h.check()).toEqual([]);
}
