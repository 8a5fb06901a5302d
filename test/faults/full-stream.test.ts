import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiscardPolicy, jetstreamManager } from '@nats-io/jetstream';
import { DECLARATIONS_BUCKET, REPORTS_STREAM } from '../../src/link/wire.js';
import { runCli } from '../support/cli.js';
import { control } from '../support/daemon.js';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';

const unavailable = natsUnavailable();

/** Waits until the condition holds, naming it when it does not within the bound. */
async function until(what: string | (() => string), holds: () => boolean, timeoutMs = 30_000): Promise<void> {
  const started = Date.now();
  while (!holds()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A JetStream store that is full, on a real nats-server: the declarations' stream at its byte limit.
 * `meshctl send` fails saying which limit is full and what to do, as data under --json; once there is
 * room it sends.
 */
describe.skipIf(unavailable !== undefined && !process.env.CI)(`a full JetStream store${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const mesh = useMesh();

  it("meshctl send names the declarations stream's byte limit when it is full, and sends once there is room", async () => {
    const h = await mesh.enrol({ start: false });
    const nc = await control([mesh.server.url]);
    const jsm = await jetstreamManager(nc);
    const stream = `KV_${DECLARATIONS_BUCKET}`;
    const info = await jsm.streams.info(stream);
    const key = join(h.dir, 'keys/operator.nk');
    const file = join(h.dir, 'next.json');
    writeFileSync(file, JSON.stringify({ version: 1, node: h.node, mode: 'converged', resources: [{ type: 'directory', id: 'b', path: '/srv/b' }] }));
    const send = () => runCli('meshctl', ['send', h.node, file, '--key', key, '--server', mesh.server.url, '--json', '--log-level', 'error'], { timeoutMs: 60_000 });
    // Full: no more bytes than it holds.
    await jsm.streams.update(stream, { ...info.config, max_bytes: Math.max(1, info.state.bytes) });
    const full = await send();
    expect(full.code, full.stderr).toBe(3);
    expect(full.stderr).not.toMatch(/unexpected failure|\n\s+at /);
    const error = (JSON.parse(full.stdout) as { error: { message: string; details: string[]; subjects: Array<{ kind: string; entry: string }> } }).error;
    expect(error.subjects).toEqual([{ kind: 'stream-max-bytes', entry: stream }]);
    expect(error.message).toContain(`the mesh's stream ${stream} is full`);
    expect(error.message).toContain(`limit of ${info.state.bytes} (max_bytes)`);
    // Nothing was sent: the key still holds the first declaration.
    expect((await jsm.streams.info(stream)).state.messages).toBe(info.state.messages);
    await jsm.streams.update(stream, { ...info.config, max_bytes: -1 });
    const sent = await send();
    expect(sent.code, sent.stderr).toBe(0);
    await nc.close();
  }, 60_000);

  it("a host's reports wait in its outbox while the reports stream is full, and go once and in order when there is room", async () => {
    const h = await mesh.enrol({ config: { heartbeatMs: 500 } });
    await h.waitForReports(1);
    const nc = await control([mesh.server.url]);
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(REPORTS_STREAM);
    // Full: at its byte limit, and turning new messages away (discard new) rather than dropping the oldest.
    await jsm.streams.update(REPORTS_STREAM, { ...info.config, max_bytes: Math.max(1, info.state.bytes), discard: DiscardPolicy.New });
    for (let sequence = 2; sequence <= 4; sequence++) await h.put({ epoch: 1, sequence, resources: [{ type: 'directory', id: `d${sequence}`, path: `/srv/d${sequence}` }] });
    // Applied, and its reports kept in the outbox while the server turns them away.
    await until(() => `the reports waiting in the outbox: ${readdirSync(join(h.state, 'outbox')).join(' ')}\n${h.log().split('\n').filter((l) => !l.includes('event loop was held')).join('\n').slice(-3500)}`, () => readdirSync(join(h.state, 'outbox')).filter((n) => /^\d+\.json$/.test(n)).length >= 1 && existsSync(join(h.root, 'srv/d4')));
    expect((await h.reports()).length).toBe(1);
    await jsm.streams.update(REPORTS_STREAM, { ...info.config });
    await h.waitForReport('for sequence 4', (r) => r.declaration?.sequence === 4, 30_000);
    await until('the outbox emptied', () => readdirSync(join(h.state, 'outbox')).filter((n) => /^\d+\.json$/.test(n)).length === 0);
    const reports = await h.reports();
    const sequences = reports.map((r) => r.sequence);
    expect(sequences).toEqual(sequences.map((_, i) => i + 1));
    expect(reports.at(-1)?.declaration?.sequence).toBe(4);
    await nc.close();
  }, 90_000);
});

/**
 * The account's JetStream storage limit reached (the server's accounts block gives the mesh's account
 * 2 MB of file storage; unauthenticated clients are its user): `meshctl send` names the account's
 * limit, not a stream's, and sends once there is room.
 */
const ACCOUNT_LIMIT = 2 * 1024 * 1024;
const accountConfig = join(mkdtempSync(join(tmpdir(), 'mesh-host-account-')), 'account.conf');
writeFileSync(accountConfig, `accounts { MESH: { jetstream: { max_file: ${ACCOUNT_LIMIT}, max_mem: 1048576 }, users: [{ user: mesh, password: mesh }] } }\nno_auth_user: mesh\n`);

describe.skipIf(unavailable !== undefined && !process.env.CI)(`an account whose JetStream storage is full${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const mesh = useMesh({ server: { configFile: accountConfig } });

  it("meshctl send names the account's storage limit when it is reached, and sends once there is room", async () => {
    const h = await mesh.enrol({ start: false });
    const nc = await control([mesh.server.url]);
    const jsm = await jetstreamManager(nc);
    const js = jsm.jetstream();
    const stream = `KV_${DECLARATIONS_BUCKET}`;
    // Another stream of the account takes what is left, to the last few bytes: chunks of 64 KiB, then 1 KiB, then 64 bytes, each until the server turns one away.
    await jsm.streams.add({ name: 'FILLER', subjects: ['filler'] });
    for (const size of [65_536, 1024, 64]) {
      const chunk = new Uint8Array(size);
      for (;;) {
        const accepted = await js.publish('filler', chunk).then(() => true, () => false);
        if (!accepted) break;
      }
    }
    const account = await jsm.getAccountInfo();
    expect(account.limits.max_storage).toBe(ACCOUNT_LIMIT);
    expect(ACCOUNT_LIMIT - account.storage, 'the account is full to within a small declaration').toBeLessThan(1024);
    const before = (await jsm.streams.info(stream)).state.messages;

    const key = join(h.dir, 'keys/operator.nk');
    const file = join(h.dir, 'next.json');
    writeFileSync(file, JSON.stringify({ version: 1, node: h.node, mode: 'converged', resources: [{ type: 'directory', id: 'b', path: '/srv/b' }] }));
    const send = () => runCli('meshctl', ['send', h.node, file, '--key', key, '--server', mesh.server.url, '--json', '--log-level', 'error'], { timeoutMs: 60_000 });
    const full = await send();
    expect(full.code, full.stdout + full.stderr).toBe(3);
    expect(full.stderr).not.toMatch(/unexpected failure|\n\s+at /);
    const error = (JSON.parse(full.stdout) as { error: { message: string; subjects: Array<{ kind: string; entry: string }> } }).error;
    expect(error.subjects).toEqual([{ kind: 'account-max-storage', entry: 'account' }]);
    expect(error.message).toContain(`storage limit of ${ACCOUNT_LIMIT} (max_storage)`);
    expect((await jsm.streams.info(stream)).state.messages, 'nothing was sent').toBe(before);

    await jsm.streams.purge('FILLER');
    const sent = await send();
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    expect((await jsm.streams.info(stream)).state.messages).toBe(before + 1);
    await nc.close();
  }, 120_000);
});
