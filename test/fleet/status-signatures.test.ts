import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { control } from '../support/daemon.js';
import { NatsServer, natsUnavailable } from '../support/nats.js';
import { runCli } from '../support/cli.js';
import { ensureWire } from '../../src/link/control.js';
import { Enrolments } from '../../src/link/enrolment.js';
import { heartbeatSubject, reportMessageId, reportSubject } from '../../src/link/wire.js';
import { newNkeySeed } from '../../src/core/declaration/nkey.js';
import { REPORT_SIGNATURE_HEADER, reportSigner, type ReportSigner } from '../../src/link/report-trust.js';
import type { FleetRow } from '../../src/control/fleet/fleet.js';

const unavailable = natsUnavailable();
const newSigner = () => reportSigner(newNkeySeed('node')) as ReportSigner;

const at = new Date().toISOString();
/** A report as a host makes it, naming `named`: the same bytes for the same node and sequence. */
const reportBytes = (named: string, sequence: number) => {
  return Buffer.from(JSON.stringify({ node: named, sequence, trigger: 'reconcile', mode: 'converged', outcome: 'converged', steps: [], said: [], startedAt: at, finishedAt: at }));
};

/** Publishes a report of `node` with the headers given (none: unsigned), and a heartbeat. */
async function publish(nc: NatsConnection, node: string, sequence: number, bytes: Buffer, headers: Record<string, string>): Promise<void> {
  const h = natsHeaders();
  for (const [name, value] of Object.entries(headers)) h.set(name, value);
  await jetstream(nc).publish(reportSubject(node), bytes, { msgID: reportMessageId(node, sequence), ...(Object.keys(headers).length ? { headers: h } : {}) });
  nc.publish(heartbeatSubject(node), JSON.stringify({ node, reportSequence: sequence, uptimeSeconds: 1, intervalMs: 600_000 }));
}

describe.skipIf(unavailable !== undefined && !process.env.CI)(`meshctl status checks each newest report's signature as the reports are read, against a real nats-server${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let server: NatsServer;
  let nc: NatsConnection;
  beforeAll(async () => {
    server = await NatsServer.start();
    nc = await control([server.url]);
    await ensureWire(nc);
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it('among 300 well-signed nodes, a forged report, one signed by another key, one naming another node and one forged after a good one fail; an unsigned one is unverified; one made good after a forged one is verified', async () => {
    const enrolments = await Enrolments.open(nc);
    const signers = new Map<string, ReportSigner>();
    const good = Array.from({ length: 300 }, (_, i) => `good-${String(i).padStart(3, '0')}`);
    const odd = ['forged', 'stranger', 'elsewhere', 'unsigned', 'forged-late', 'made-good'];
    for (const node of [...good, ...odd]) {
      signers.set(node, newSigner());
      await enrolments.pin(node, signers.get(node)!.publicKey);
    }
    const signedBy = (node: string, bytes: Buffer) => signers.get(node)!.headersFor(bytes);
    // Half the good nodes before the odd ones and half after: the odd ones are checked in the middle of the read.
    for (const node of good.slice(0, 150)) await publish(nc, node, 1, reportBytes(node, 1), signedBy(node, reportBytes(node, 1)));
    const forged = reportBytes('forged', 1);
    await publish(nc, 'forged', 1, forged, { ...signedBy('forged', forged), [REPORT_SIGNATURE_HEADER]: signedBy('forged', reportBytes('forged', 2))[REPORT_SIGNATURE_HEADER]! });
    await publish(nc, 'stranger', 1, reportBytes('stranger', 1), newSigner().headersFor(reportBytes('stranger', 1)));
    await publish(nc, 'elsewhere', 1, reportBytes('good-000', 1), signedBy('elsewhere', reportBytes('good-000', 1)));
    await publish(nc, 'unsigned', 1, reportBytes('unsigned', 1), {});
    await publish(nc, 'forged-late', 1, reportBytes('forged-late', 1), signedBy('forged-late', reportBytes('forged-late', 1)));
    await publish(nc, 'forged-late', 2, reportBytes('forged-late', 2), signedBy('forged-late', reportBytes('forged-late', 1)));
    await publish(nc, 'made-good', 1, reportBytes('made-good', 1), signedBy('made-good', reportBytes('made-good', 9)));
    await publish(nc, 'made-good', 2, reportBytes('made-good', 2), signedBy('made-good', reportBytes('made-good', 2)));
    for (const node of good.slice(150)) await publish(nc, node, 1, reportBytes(node, 1), signedBy(node, reportBytes(node, 1)));
    await nc.flush();

    const view = await runCli('meshctl', ['status', '--server', server.url, '--json', '--log-level', 'warn']);
    const rows = new Map((JSON.parse(view.stdout) as { nodes: FleetRow[] }).nodes.map((r) => [r.node, r]));
    expect(view.code, view.stderr).toBe(1);
    expect(rows.size).toBe(good.length + odd.length);
    expect(good.filter((node) => rows.get(node)?.signature !== 'verified')).toEqual([]);
    const said = (node: string) => [rows.get(node)?.signature, rows.get(node)?.problems.find((p) => /signature|verified/.test(p))];
    expect(said('forged')).toEqual(['failed', "its last report's signature does not verify: the signature does not hold over the report bytes"]);
    expect(said('stranger')).toEqual(['failed', expect.stringMatching(/^its last report's signature does not verify: signed by N\w+, not by the key its node enrolled/)]);
    expect(said('elsewhere')).toEqual(['failed', "its last report's signature does not verify: it names good-000, not the node of its subject"]);
    expect(said('unsigned')).toEqual(['unverified', 'its last report is not verified: it is not signed']);
    expect(said('forged-late')).toEqual(['failed', "its last report's signature does not verify: the signature does not hold over the report bytes"]);
    expect(said('made-good')).toEqual(['verified', undefined]);
  }, 120_000);
});
