import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { ensureWire } from '../../src/link/control.js';
import { latestPerSubject } from '../../src/link/latest.js';
import { REPORTS_STREAM, REPORTS_SUBJECTS, reportSubject } from '../../src/link/wire.js';
import { NatsServer } from '../support/nats.js';

describe('the newest message of every subject, in one read', () => {
  let server: NatsServer;
  let nc: NatsConnection;
  beforeAll(async () => {
    server = await NatsServer.start();
    nc = await connect({ servers: [server.url] });
    await ensureWire(nc);
  });
  afterAll(async () => {
    await nc.close();
    await server.stop();
  });

  it('an empty stream reads as nothing; then one message a node, the newest', async () => {
    expect((await latestPerSubject(nc, REPORTS_STREAM, REPORTS_SUBJECTS)).size).toBe(0);
    const js = jetstream(nc);
    for (let round = 1; round <= 3; round++) {
      for (let n = 0; n < 50; n++) await js.publish(reportSubject(`n${n}`), JSON.stringify({ node: `n${n}`, sequence: round }));
    }
    const latest = await latestPerSubject(nc, REPORTS_STREAM, REPORTS_SUBJECTS);
    expect(latest.size).toBe(50);
    for (const [subject, m] of latest) {
      const report = JSON.parse(new TextDecoder().decode(m.bytes)) as { node: string; sequence: number };
      expect(subject).toBe(reportSubject(report.node));
      expect(report.sequence).toBe(3);
    }
    const one = await latestPerSubject(nc, REPORTS_STREAM, reportSubject('n7'));
    expect([...one.keys()]).toEqual([reportSubject('n7')]);
  });

  it('says where the stream holds each message and when it stored it, and leaves no consumer behind', async () => {
    const js = jetstream(nc);
    const before = Date.now();
    const ack = await js.publish(reportSubject('timed'), JSON.stringify({ node: 'timed', sequence: 1 }));
    const stored = (await latestPerSubject(nc, REPORTS_STREAM, reportSubject('timed'))).get(reportSubject('timed'))!;
    expect(stored.streamSequence).toBe(ack.seq);
    expect(Date.parse(stored.storedAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(stored.storedAt)).toBeLessThanOrEqual(Date.now() + 1000);
    // The read's consumer is deleted once it is done (the delete is not waited for): gone soon after.
    const jsm = await jetstreamManager(nc);
    await expect.poll(async () => (await jsm.streams.info(REPORTS_STREAM)).state.consumer_count, { timeout: 30_000, interval: 100 }).toBe(0);
  });

  it('reads more subjects than one pull asks for, and a stream that does not exist is an error of the JetStream API', async () => {
    const js = jetstream(nc);
    const many = 1500;
    for (let n = 0; n < many; n += 100) await Promise.all(Array.from({ length: 100 }, (_, i) => js.publish(`mesh.report.bulk.m${n + i}`, '{}')));
    const latest = await latestPerSubject(nc, REPORTS_STREAM, 'mesh.report.bulk.>');
    expect(latest.size).toBe(many);
    await expect(latestPerSubject(nc, 'NO_SUCH_STREAM', 'x.>')).rejects.toMatchObject({ code: 10059 });
  });
});
