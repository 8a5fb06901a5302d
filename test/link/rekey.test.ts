import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, credsAuthenticator, headers } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, type InitHost, type InitMesh } from '../support/mesh-init.js';
import { runCli } from '../support/cli.js';
import { waitFor } from '../support/revocation.js';
import { ENROLMENTS_BUCKET, reportMessageId, reportSubject } from '../../src/link/wire.js';
import { reportSigner } from '../../src/link/report-trust.js';
import { checkRekeyChain, rekeyHeader, signRekey } from '../../src/link/rekey.js';
import { newNkeySeed, nkeySeed } from '../../src/core/declaration/nkey.js';

const unavailable = natsUnavailable();
const publicOf = (seed: string) => (nkeySeed(seed, 'node') as { publicKey: string }).publicKey;

describe("a rekey's chain of signed changes, as the control side checks it", () => {
  const [k0, k1, k2, other] = [newNkeySeed('node'), newNkeySeed('node'), newNkeySeed('node'), newNkeySeed('node')];
  const at = '2026-12-07T00:00:00.000Z';

  it('walks from the key the mesh holds to the key of the report, one change after the other', () => {
    const chain = [signRekey('n1', k0, k1, at, 3), signRekey('n1', k1, k2, at, 7)];
    const walked = checkRekeyChain(rekeyHeader(chain), 'n1', publicOf(k0), publicOf(k2));
    expect(walked).toEqual([chain[0]!.rekey, chain[1]!.rekey]);
    // A control side that already holds k1 walks the rest only.
    expect(checkRekeyChain(rekeyHeader(chain), 'n1', publicOf(k1), publicOf(k2))).toEqual([chain[1]!.rekey]);
  });

  it('refuses a change for another node, one not from the key held, one signed by one key only, and a chain that ends elsewhere', () => {
    const good = signRekey('n1', k0, k1, at, 3);
    expect(checkRekeyChain(rekeyHeader([signRekey('n2', k0, k1, at, 3)]), 'n1', publicOf(k0), publicOf(k1))).toMatch(/is for n2/);
    expect(checkRekeyChain(rekeyHeader([signRekey('n1', other, k1, at, 3)]), 'n1', publicOf(k0), publicOf(k1))).toMatch(/no change of key .* starts from the key the mesh holds/);
    // The new key signs, but the retired one's signature is another's: a thief with the new key alone cannot hand over.
    const forged = { ...good, fromSignature: signRekey('n1', other, k1, at, 3).fromSignature };
    expect(checkRekeyChain(rekeyHeader([forged]), 'n1', publicOf(k0), publicOf(k1))).toMatch(/not signed by the retired key/);
    const unsignedByNew = { ...good, toSignature: signRekey('n1', k0, other, at, 3).toSignature };
    expect(checkRekeyChain(rekeyHeader([unsignedByNew]), 'n1', publicOf(k0), publicOf(k1))).toMatch(/not signed by the new key/);
    const moved = { ...good, rekey: { ...good.rekey, afterReport: 99 } };
    expect(checkRekeyChain(rekeyHeader([moved]), 'n1', publicOf(k0), publicOf(k1))).toMatch(/not signed by the retired key/);
    expect(checkRekeyChain(rekeyHeader([good]), 'n1', publicOf(k0), publicOf(k2))).toMatch(/does not end at the key the report is signed by/);
    expect(checkRekeyChain('not base64 json', 'n1', publicOf(k0), publicOf(k1))).toMatch(/not JSON/);
  });
});

interface ReadReport {
  sequence: number;
  trust: { verdict: string; reason?: string };
}

describe.skipIf(unavailable !== undefined && !process.env.CI)(`mesh-host rekey against a real nats-server and daemon${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let mesh: InitMesh;
  let host: InitHost;

  beforeAll(async () => {
    mesh = await initMesh();
    host = await mesh.enrol('rk', { resources: [{ type: 'file', id: 'conf', path: '/srv/app.conf', content: 'one\n' }] });
  }, 120_000);
  afterAll(async () => {
    await mesh?.close();
  });

  const reports = async (): Promise<ReadReport[]> => {
    const read = await mesh.meshctl(['reports', '--node', host.node, '--json']);
    expect(read.code, read.stderr).toBe(0);
    return read.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as ReadReport);
  };

  it("records the new key from the host's next report, signed by both keys; the old key's reports before it still verify, one it signs after is flagged", async () => {
    await waitFor('the first report at the hub', async () => (await reports()).length > 0, [host]);
    const oldSeed = readFileSync(join(host.state, 'node.nk'), 'utf8').trim();
    const rekeyed = await runCli('mesh-host', ['rekey', ...host.flags, '--json']);
    expect(rekeyed.code, rekeyed.stderr).toBe(0);
    const { key, retired, afterReport } = JSON.parse(rekeyed.stdout) as { key: string; retired: string; afterReport: number };
    expect(retired).toBe(publicOf(oldSeed));
    expect(key).toBe(publicOf(readFileSync(join(host.state, 'node.nk'), 'utf8').trim()));

    // The running daemon signs its next report with the new key: a hand edit it puts back makes one.
    await waitFor('the daemon watching its footprint', () => host.log().includes('the footprint is watched from here on'), [host]);
    writeFileSync(join(host.root, 'srv/app.conf'), 'tampered\n');
    await waitFor('a report after the rekey at the hub', async () => (await reports()).some((r) => r.sequence > afterReport), [host]);
    const after = await reports();
    expect(after.every((r) => r.trust.verdict === 'verified'), JSON.stringify(after.map((r) => [r.sequence, r.trust]))).toBe(true);

    const nc = await connect({ servers: mesh.servers[0]!.url, authenticator: credsAuthenticator(readFileSync(join(mesh.dir, 'meshctl.creds'))) });
    try {
      const enrolment = (await (await new Kvm(nc).open(ENROLMENTS_BUCKET)).get(host.node))!.json<{ key: string; by: string; retired: Array<{ key: string; afterReport: number }> }>();
      expect(enrolment).toMatchObject({ key, by: 'rekey', retired: [{ key: retired, afterReport }] });

      // Whoever still holds the old key signs a report after the rekey: flagged, never trusted.
      const sequence = after.at(-1)!.sequence + 1;
      const bytes = Buffer.from(JSON.stringify({ node: host.node, sequence, outcome: 'converged', trigger: 'reconcile', finishedAt: new Date().toISOString() }));
      const h = headers();
      for (const [name, value] of Object.entries((reportSigner(oldSeed) as Exclude<ReturnType<typeof reportSigner>, string>).headersFor(bytes))) h.set(name, value);
      await jetstream(nc).publish(reportSubject(host.node), bytes, { msgID: reportMessageId(host.node, sequence), headers: h });
    } finally {
      await nc.close();
    }
    const last = (await reports()).at(-1)!;
    expect(last.trust.verdict).toBe('retired-key');
    const status = await mesh.meshctl(['status']);
    expect(status.stdout).toMatch(new RegExp(`signed by ${retired}, a key its node retired at .* \\(after its report ${afterReport}\\)`));
  }, 120_000);
});
