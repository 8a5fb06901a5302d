import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { obtainArchive, OBJECT_ARRIVAL_MS } from '../../src/kinds/archive/obtain.js';
import { DEFAULT_ARCHIVE_LIMITS } from '../../src/core/config/archive-limits.js';
import { systemClock, type Clock } from '../../src/core/system/clock.js';
import { memoryObjects } from '../support/archives.js';
import { scratch } from '../support/tree.js';

const bytes = Buffer.from('an archive, as bytes');
const sha256 = createHash('sha256').update(bytes).digest('hex');

/** A store that may follow another, a clock whose sleeps move time on and may bring the object in. */
function setting(follows: boolean, arrivesAfterSleeps?: number) {
  const objects = new Map<string, Buffer>();
  let now = 0;
  const slept: number[] = [];
  const clock: Clock = {
    ...systemClock,
    monotonic: () => now,
    boot: () => ({ bootId: 'fake-boot', ms: now }),
    sleep: async (ms) => {
      slept.push(ms);
      now += ms;
      if (slept.length === arrivesAfterSleeps) objects.set('app.tgz', bytes);
    },
  };
  const store = { ...memoryObjects(objects), follows: async () => follows };
  const work = scratch('mesh-host-arrival-');
  const env = { stateDir: work.dir, limits: DEFAULT_ARCHIVE_LIMITS, clock, objects: async () => store };
  return { env, slept, objects, cleanup: () => work.cleanup() };
}

describe('an object on its way to the store a host reads', () => {
  it("in a site's copy of the store, is waited for and fetched once it is there", async () => {
    const s = setting(true, 3);
    const obtained = await obtainArchive(s.env, { object: 'app.tgz' }, sha256, true);
    expect(obtained?.how).toBe('fetched');
    expect(s.slept).toEqual([100, 200, 400]);
    s.cleanup();
  });

  it('in the store uploads go to, is refused at once when missing', async () => {
    const s = setting(false);
    await expect(obtainArchive(s.env, { object: 'app.tgz' }, sha256, true)).rejects.toThrow(/object 'app.tgz' is not in the archive store/);
    expect(s.slept).toEqual([]);
    s.cleanup();
  });

  it("in a site's copy, an older upload under the same name is waited past, and refused by its digest once the wait is over", async () => {
    const s = setting(true);
    s.objects.set('app.tgz', Buffer.from('the older upload'));
    await expect(obtainArchive(s.env, { object: 'app.tgz' }, sha256, true)).rejects.toThrow(/sha256/);
    const waited = s.slept.reduce((a, b) => a + b, 0);
    expect(waited).toBeLessThanOrEqual(OBJECT_ARRIVAL_MS);
    expect(waited).toBeGreaterThan(OBJECT_ARRIVAL_MS - 2_000);
    s.cleanup();
  });
});
