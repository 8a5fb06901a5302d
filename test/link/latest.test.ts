import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
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
});
