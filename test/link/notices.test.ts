import { describe, expect, it } from 'vitest';
import { headers } from '@nats-io/transport-node';
import { HeardReads, noticeOf } from '../../src/link/notices.js';

const withHeaders = (pairs: Record<string, string>) => {
  const h = headers();
  for (const [k, v] of Object.entries(pairs)) h.set(k, v);
  return h;
};

/** A key whose revisions come in as the test says; reads counted; pauses end at once. */
function fakeLink() {
  const link = { stored: 0, delivered: 0, reads: 0, closed: false };
  const reads = new HeardReads({
    read: async () => {
      link.reads++;
      link.delivered = Math.max(link.delivered, link.stored);
    },
    revision: () => link.delivered,
    pause: () => new Promise((r) => setImmediate(r)),
    closed: () => link.closed,
  });
  const settled = async () => {
    for (let i = 0; i < 200; i++) await new Promise((r) => setImmediate(r));
  };
  return { link, reads, settled };
}

describe('notices of puts', () => {
  it("name the revision a site's leaf stored (its source's sequence, local or across domains), none for a put heard at the hub, and nothing to read for a delete", () => {
    expect(noticeOf(withHeaders({ 'Nats-Stream-Source': 'KV_mesh_declarations:580oR8ji 42' }))).toEqual({ read: true, revision: 42 });
    expect(noticeOf(withHeaders({ 'Nats-Stream-Source': 'KV_mesh_declarations 7 > >' }))).toEqual({ read: true, revision: 7 });
    expect(noticeOf(withHeaders({ 'Nats-Stream-Source': 'OTHER 7' }))).toEqual({ read: true });
    expect(noticeOf(undefined)).toEqual({ read: true });
    expect(noticeOf(withHeaders({ 'KV-Operation': 'DEL', 'Nats-Stream-Source': 'KV_mesh_declarations 7' }))).toEqual({ read: false });
    expect(noticeOf(withHeaders({ 'KV-Operation': 'PURGE' }))).toEqual({ read: false });
  });

  it('after a cut, a burst of named notices caught up costs one read once the newest is delivered', async () => {
    const { link, reads, settled } = fakeLink();
    link.stored = 5;
    for (const revision of [3, 4, 5]) reads.heard({ read: true, revision });
    await settled();
    expect(link.delivered).toBe(5);
    expect(link.reads).toBe(1);
    // Already delivered: nothing read.
    reads.heard({ read: true, revision: 4 });
    await settled();
    expect(link.reads).toBe(1);
  });

  it('a named revision not yet readable is read again until it is, and given up after ten reads', async () => {
    const { link, reads, settled } = fakeLink();
    reads.heard({ read: true, revision: 2 });
    await settled();
    expect(link.reads).toBe(10);
    link.stored = 2;
    reads.heard({ read: true, revision: 2 });
    await settled();
    expect(link.reads).toBe(11);
    expect(link.delivered).toBe(2);
  });

  it('an unnamed notice reads until something newer than what was delivered comes', async () => {
    const { link, reads, settled } = fakeLink();
    link.stored = 1;
    reads.heard({ read: true });
    await settled();
    expect(link.reads).toBe(1);
    expect(link.delivered).toBe(1);
    reads.heard({ read: true });
    await settled();
    expect(link.reads).toBe(11);
    reads.heard({ read: false });
    await settled();
    expect(link.reads).toBe(11);
  });
});
