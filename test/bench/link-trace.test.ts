import { describe, expect, it } from 'vitest';
import { collectionsIn } from '../../bench/link-trace.js';

/** A delivery put at `putAt` and heard `ms` later. */
const delivery = (putAt: number, ms: number) => ({ putAt, heardAt: putAt + ms, ms });

describe('the full collections matched to the deliveries they paused', () => {
  it('splits the deliveries by whether a pause began between their put and their report', () => {
    const seen = [delivery(0, 10), delivery(100, 30), delivery(200, 12), delivery(300, 28)];
    const lines = collectionsIn(seen, [{ at: 110, ms: 9 }, { at: 305, ms: 11 }, { at: 250, ms: 50 }]).join(' ');
    // The pause at 250 fell between deliveries: it is none of theirs.
    expect(lines).toContain('2 of the 4 deliveries had a full collection');
    expect(lines).toContain('median 10.0 ms, longest 11.0 ms');
    expect(lines).toContain('those took median 29.0 ms');
    expect(lines).toContain('the other 2: median 11.0 ms');
  });

  it('says when no pause fell inside a delivery, and how many the run had', () => {
    expect(collectionsIn([delivery(0, 10)], [{ at: 50, ms: 9 }]).join(' ')).toBe("No full collection of the daemon's heap fell inside a delivery (1 in the whole run).");
  });
});
