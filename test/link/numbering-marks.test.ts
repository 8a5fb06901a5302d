import { describe, expect, it } from 'vitest';
import { nextMark, refuseUnlessNewer } from '../../src/control/commands/numbering.js';

describe('the number a send gives, from what the mesh and the host say', () => {
  it('is after the newest of the key, the latest report and what the last heartbeat says the host applied and keeps', () => {
    expect(nextMark({ key: { revision: 9, mark: { epoch: 1, sequence: 4 } }, reported: { epoch: 1, sequence: 3 } }, undefined)).toEqual({ epoch: 1, sequence: 5 });
    // The key purged and the reports gone: the host's own word still numbers after what it applied.
    expect(nextMark({ key: { revision: 9 }, held: [{ sequence: 4 }] }, undefined)).toEqual({ sequence: 5 });
    // A paused host keeps a newer declaration than it applied: after that one.
    expect(nextMark({ key: { revision: 9 }, reported: { epoch: 1, sequence: 1 }, held: [{ epoch: 1, sequence: 1 }, { epoch: 1, sequence: 2 }] }, undefined)).toEqual({ epoch: 1, sequence: 3 });
    expect(nextMark({}, undefined)).toEqual({ sequence: 1 });
  });

  it('a declared number the host would refuse is refused before anything is sent, naming what it is not newer than', () => {
    expect(() => refuseUnlessNewer({ epoch: 1, sequence: 3 }, { key: { revision: 9 }, held: [{ epoch: 1, sequence: 2 }, { epoch: 1, sequence: 3 }] }, 'app.json', 'web-1')).toThrow(
      'app.json declares epoch 1, sequence 3, which is not newer than what web-1 holds by its last heartbeat (epoch 1, sequence 3): the host would refuse it as stale; nothing was sent',
    );
    expect(() => refuseUnlessNewer({ epoch: 1, sequence: 4 }, { key: { revision: 9, mark: { epoch: 1, sequence: 4 } } }, 'app.json', 'web-1')).toThrow(/not newer than the key of web-1 \(epoch 1, sequence 4, revision 9\)/);
    expect(() => refuseUnlessNewer({ epoch: 1, sequence: 4 }, { key: { revision: 9, mark: { epoch: 1, sequence: 3 } }, held: [{ epoch: 1, sequence: 3 }] }, 'app.json', 'web-1')).not.toThrow();
    // Ordered as the host orders: against a mark without an epoch the sequence alone decides, so a new
    // epoch does not make a lower sequence newer (the host would refuse it as stale).
    expect(() => refuseUnlessNewer({ epoch: 2, sequence: 1 }, { key: { revision: 9, mark: { sequence: 5 } } }, 'app.json', 'web-1')).toThrow(/epoch 2, sequence 1, which is not newer than the key of web-1 \(sequence 5/);
    expect(() => refuseUnlessNewer({ epoch: 2, sequence: 1 }, { key: { revision: 9, mark: { epoch: 1, sequence: 5 } } }, 'app.json', 'web-1')).not.toThrow();
  });
});
