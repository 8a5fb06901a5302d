import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { connect, credsAuthenticator, headers as natsHeaders, type NatsConnection, type Status } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { NatsServer, natsUnavailable } from '../support/nats.js';
import { operatorMode } from '../support/nats-auth.js';
import { projectDir, runCli } from '../support/cli.js';
import { scratch } from '../support/tree.js';
import { ARCHIVES_BUCKET, DECLARATIONS_BUCKET, hostInboxPrefix, REPORTS_STREAM } from '../../src/link/wire.js';
import { REPORT_KEY_HEADER, REPORT_SIGNATURE_HEADER, reportSigner, type ReportSigner } from '../../src/link/report-trust.js';
import { newNkeySeed } from '../../src/core/declaration/nkey.js';
import { HOST_KEY_FILE } from '../../src/engine/report/host-key.js';

const unavailable = natsUnavailable();
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PERMISSION = /permissions violation/i;

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await wait(100);
  }
}

interface PrintedReport {
  node: string;
  sequence: number;
  trigger: string;
  trust: { verdict: string; key?: string; enrolledBy?: string };
}

/**
 * Credentials issued by `meshctl node-creds`, against a real nats-server in operator mode: a host
 * with its own works end to end (watch, deliveries, reports, requests, heartbeat), and the same
 * credentials are refused everything that reaches another node or writes what the control side keeps.
 */
describe.skipIf(unavailable !== undefined && !process.env.CI)(`per-node credentials${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let server: NatsServer;
  let work: ReturnType<typeof scratch>;
  let control: NatsConnection;
  let controlFlags: string[];
  let key: string;
  let daemon: ChildProcess | undefined;
  let daemonLog = '';
  let archive: Record<string, unknown>;
  let pinnedKey: string;
  const creds = (node: string) => join(work.dir, `${node}.creds`);
  const hostFlags = () => ['--root', join(work.dir, 'root'), '--state-dir', join(work.dir, 'state'), '--config', join(work.dir, 'host.json')];

  beforeAll(async () => {
    work = scratch('mesh-host-node-creds-');
    const auth = await operatorMode(work.dir);
    server = await NatsServer.start({ configFile: auth.conf });
    controlFlags = ['--server', server.url, '--creds', auth.creds];
    control = await connect({ servers: server.url, authenticator: credsAuthenticator(readFileSync(auth.creds)) });
    for (const node of ['alpha', 'beta']) {
      const issued = await runCli('meshctl', ['node-creds', node, '--account-key', auth.accountKey, '--account', auth.account, '--out', creds(node), '--json']);
      expect(issued.code, issued.stderr).toBe(0);
      expect(statSync(creds(node)).mode & 0o777).toBe(0o600);
    }
    key = join(work.dir, 'keys', 'operator.nk');
    expect((await runCli('meshctl', ['keygen', '--out', join(work.dir, 'keys')])).code).toBe(0);
    // beta's key holds a value alpha must never read; the archives bucket holds one object.
    const beta = join(work.dir, 'beta.json');
    writeFileSync(beta, JSON.stringify({ version: 1, node: 'beta', mode: 'converged', resources: [] }));
    const sent = await runCli('meshctl', ['send', 'beta', beta, '--key', key, ...controlFlags]);
    expect(sent.code, sent.stderr).toBe(0);
    // One archive in the store, uploaded with the control side's credentials.
    mkdirSync(join(work.dir, 'release', 'bin'), { recursive: true });
    writeFileSync(join(work.dir, 'release', 'bin', 'tool'), '#!/bin/sh\necho tool\n');
    execFileSync('tar', ['czf', join(work.dir, 'release.tgz'), '-C', join(work.dir, 'release'), 'bin']);
    const put = await runCli('meshctl', ['put-archive', join(work.dir, 'release.tgz'), '--json', ...controlFlags]);
    expect(put.code, put.stderr).toBe(0);
    archive = (JSON.parse(put.stdout) as { resource: Record<string, unknown> }).resource;

    // alpha's key is made and pinned at the bundle step; the bundle carries it and alpha's credentials.
    const pinned = await runCli('meshctl', ['node-key', 'alpha', '--out', join(work.dir, 'alpha.nk'), '--json', ...controlFlags]);
    expect(pinned.code, pinned.stderr).toBe(0);
    pinnedKey = (JSON.parse(pinned.stdout) as { publicKey: string }).publicKey;
    mkdirSync(join(work.dir, 'root', 'srv'), { recursive: true });
    const first = join(work.dir, 'first.json');
    writeFileSync(first, JSON.stringify({ version: 1, node: 'alpha', mode: 'converged', sequence: 1, resources: [] }));
    const bundle = join(work.dir, 'bundle.json');
    const made = await runCli('meshctl', ['bundle', first, '--key', key, ...controlFlags, '--embed-creds', creds('alpha'), '--node-key', join(work.dir, 'alpha.nk'), '--out', bundle]);
    expect(made.code, made.stderr).toBe(0);
    // Another node's credentials are refused in alpha's bundle, before anything is written.
    const wrong = await runCli('meshctl', ['bundle', first, '--key', key, ...controlFlags, '--embed-creds', creds('beta'), '--offline']);
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toMatch(/is not for alpha: .*issued for another node/);
    const genesis = await runCli('mesh-host', ['genesis', bundle, '--mode', 'converged', ...hostFlags(), '--log-level', 'warn']);
    expect(genesis.code, genesis.stderr).toBe(0);
    // The carried credentials are the host's own now, 0600 under the state directory; the carried bundle copy keeps no secret.
    const written = JSON.parse(readFileSync(join(work.dir, 'host.json'), 'utf8')) as { creds?: string };
    expect(written.creds).toBe(join(work.dir, 'state', 'node.creds'));
    expect(readFileSync(written.creds!, 'utf8')).toBe(readFileSync(creds('alpha'), 'utf8'));
    expect(statSync(written.creds!).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(work.dir, 'state', 'bundle.json'), 'utf8')).not.toMatch(/NKEY SEED|"secrets"/);
    // A heartbeat every second, so that one is heard soon.
    const config = join(work.dir, 'host.json');
    writeFileSync(config, JSON.stringify({ ...JSON.parse(readFileSync(config, 'utf8')), heartbeatMs: 1000 }));
    daemon = spawn(process.execPath, [join(projectDir, 'bin/mesh-host'), 'run', ...hostFlags()], { stdio: ['ignore', 'pipe', 'pipe'] });
    daemon.stdout!.on('data', (d: Buffer) => (daemonLog += d.toString()));
    daemon.stderr!.on('data', (d: Buffer) => (daemonLog += d.toString()));
  });

  afterAll(async () => {
    if (daemon && daemon.exitCode === null) {
      daemon.kill('SIGTERM');
      await new Promise((r) => daemon!.once('exit', r));
    }
    await control?.close();
    await server?.stop();
    work?.cleanup();
  });

  async function reports(node: string): Promise<{ lines: PrintedReport[]; stderr: string }> {
    const read = await runCli('meshctl', ['reports', '--node', node, '--json', ...controlFlags]);
    expect(read.code, read.stderr).toBe(0);
    return { lines: read.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as PrintedReport), stderr: read.stderr };
  }

  it('a host with its issued credentials works end to end: puts to its key heard and delivered, an archive fetched, reports acknowledged and verified, requests answered, heartbeat heard', async () => {
    const beats: string[] = [];
    const heartbeat = control.subscribe('mesh.heartbeat.alpha', { callback: (_err, m) => void beats.push(m.string()) });
    const next = join(work.dir, 'next.json');
    writeFileSync(next, JSON.stringify({ version: 1, node: 'alpha', mode: 'converged', resources: [{ type: 'directory', id: 'd', path: '/srv/alpha' }, { ...archive, path: '/srv/release' }] }));
    const sent = await runCli('meshctl', ['send', 'alpha', next, '--key', key, ...controlFlags]);
    expect(sent.code, sent.stderr).toBe(0);
    await until(`the delivery applied\n${daemonLog}`, () => (existsSync(join(work.dir, 'root/srv/release/bin/tool')) ? true : undefined));
    expect(existsSync(join(work.dir, 'root/srv/alpha'))).toBe(true);
    const read = await until('two reports', async () => {
      const r = await reports('alpha');
      return r.lines.length >= 2 ? r : undefined;
    });
    expect(read.lines.map((r) => [r.sequence, r.trigger, r.trust.verdict])).toEqual([[1, 'genesis', 'verified'], [2, 'delivery', 'verified']]);
    // The key the reports are held to is the one pinned at the bundle step, which genesis kept 0600 in the state directory.
    const seed = readFileSync(join(work.dir, 'state', HOST_KEY_FILE), 'utf8').trim();
    expect(statSync(join(work.dir, 'state', HOST_KEY_FILE)).mode & 0o777).toBe(0o600);
    expect((reportSigner(seed) as ReportSigner).publicKey).toBe(pinnedKey);
    expect(read.lines[0]!.trust).toMatchObject({ key: pinnedKey, enrolledBy: 'bundle' });

    const status = await runCli('meshctl', ['status', 'alpha', '--json', ...controlFlags]);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ node: 'alpha', reportSequence: 2 });
    const inventory = await control.request('mesh.node.alpha.inventory', '', { timeout: 20_000 });
    expect(Object.keys(inventory.json<Record<string, unknown>>())).not.toContain('error');
    await until('a heartbeat', () => (beats.length > 0 ? true : undefined));
    expect(JSON.parse(beats[0]!)).toMatchObject({ node: 'alpha' });
    heartbeat.unsubscribe();
  }, 240_000);

  describe("the same credentials, used by hand, are refused anything beyond the host's own", () => {
    let host: NatsConnection;
    let kv: KV;
    let jsm: JetStreamManager;
    const errors: Error[] = [];
    let before: Awaited<ReturnType<typeof snapshot>>;

    /** What the control side keeps: the bucket's values, the reports per node, the archives' messages. */
    async function snapshot() {
      const controlJsm = await jetstreamManager(control);
      const kvs = await new Kvm(control).open(DECLARATIONS_BUCKET);
      const value = async (node: string) => {
        const e = await kvs.get(node);
        return e ? { revision: e.revision, value: e.string() } : null;
      };
      const reportsInfo = await controlJsm.streams.info(REPORTS_STREAM, { subjects_filter: 'mesh.report.>' } as never);
      const archives = await controlJsm.streams.info(`OBJ_${ARCHIVES_BUCKET}`);
      return { alpha: await value('alpha'), beta: await value('beta'), kvMessages: (await controlJsm.streams.info(`KV_${DECLARATIONS_BUCKET}`)).state.messages, reports: reportsInfo.state.subjects, archives: archives.state.messages };
    }

    beforeAll(async () => {
      before = await snapshot();
      host = await connect({ servers: server.url, authenticator: credsAuthenticator(readFileSync(creds('alpha'))), inboxPrefix: hostInboxPrefix('alpha') });
      void (async () => {
        for await (const s of host.status() as AsyncIterable<Status>) if (s.type === 'error') errors.push(s.error);
      })();
      kv = await new Kvm(host).open(DECLARATIONS_BUCKET, { allow_direct: true });
      jsm = await jetstreamManager(host, { checkAPI: false });
    });
    afterAll(async () => {
      await host?.close();
    });

    /** A call the server must refuse: it fails with a permission violation. */
    async function refused(what: string, call: () => Promise<unknown>): Promise<void> {
      const outcome = await call().then(
        (value) => ({ value }),
        (err: Error) => ({ err }),
      );
      expect('err' in outcome ? `${outcome.err.name}: ${outcome.err.message}` : `allowed: ${JSON.stringify(outcome.value)}`, what).toMatch(PERMISSION);
    }

    /** A publish or subscribe without a reply: the server's refusal arrives on the connection's status. */
    async function refusedAsync(what: string, subject: string, act: () => void): Promise<void> {
      act();
      await until(`the refusal of ${what}`, () => (errors.some((e) => PERMISSION.test(e.message) && e.message.includes(subject)) ? true : undefined), 10_000);
    }

    it('its own key is read with them (the control for the refusals below)', async () => {
      expect((await kv.get('alpha'))?.revision).toBeGreaterThan(0);
    });

    it("reading another node's key, by direct get, by the stream's message get, or a batch", async () => {
      await refused('direct get of beta', () => kv.get('beta'));
      await refused('message get of beta', () => jsm.streams.getMessage(`KV_${DECLARATIONS_BUCKET}`, { last_by_subj: `$KV.${DECLARATIONS_BUCKET}.beta` }));
      await refused('direct get without a subject', () => host.request(`$JS.API.DIRECT.GET.KV_${DECLARATIONS_BUCKET}`, JSON.stringify({ last_by_subj: `$KV.${DECLARATIONS_BUCKET}.beta` }), { timeout: 5000 }));
    });

    it('watching the whole bucket or another key, listing its keys, reading its status', async () => {
      await refused('watch of the bucket', async () => {
        const iterator = await kv.watch();
        iterator.stop();
      });
      await refused('watch of beta', async () => {
        const iterator = await kv.watch({ key: 'beta' });
        iterator.stop();
      });
      await refused('keys', async () => {
        const keys: string[] = [];
        for await (const k of await kv.keys()) keys.push(k);
        return keys;
      });
      await refused('status', () => kv.status());
      await refused('history of beta', async () => {
        const iterator = await kv.history({ key: 'beta' });
        iterator.stop();
      });
    });

    it('any consumer on the bucket, even one filtered on its own key: a host hears its key by listening, never through a consumer', async () => {
      await refused('watch of its own key', async () => {
        const iterator = await kv.watch({ key: 'alpha' });
        iterator.stop();
      });
      await refused('a consumer named in the subject', () =>
        host.request(
          `$JS.API.CONSUMER.CREATE.KV_${DECLARATIONS_BUCKET}.sneaky.$KV.${DECLARATIONS_BUCKET}.alpha`,
          JSON.stringify({ stream_name: `KV_${DECLARATIONS_BUCKET}`, config: { name: 'sneaky', filter_subject: `$KV.${DECLARATIONS_BUCKET}.>`, deliver_subject: `${hostInboxPrefix('alpha')}.sneaky`, ack_policy: 'none' } }),
          { timeout: 5000 },
        ),
      );
    });

    it('writing to the bucket, its own key included', async () => {
      await refused('put alpha', () => kv.put('alpha', 'x'));
      await refused('put beta', () => kv.put('beta', 'x'));
      await refused('delete beta', () => kv.delete('beta'));
      await refused('purge of the bucket', () => jsm.streams.purge(`KV_${DECLARATIONS_BUCKET}`));
    });

    it("publishing another node's report or heartbeat", async () => {
      await refused("beta's report", () => jetstream(host).publish('mesh.report.beta', JSON.stringify({ node: 'beta', sequence: 1 }), { msgID: 'beta-forged', timeout: 5000 }));
      await refusedAsync("beta's heartbeat", 'mesh.heartbeat.beta', () => host.publish('mesh.heartbeat.beta', '{"node":"beta"}'));
    });

    it("answering another node's requests, reading another host's replies, or hearing puts to another node's key", async () => {
      for (const subject of ['mesh.node.beta.status', 'mesh.node.beta.inventory', 'mesh.node.beta.plan', `${hostInboxPrefix('beta')}.>`, '_INBOX.>', 'mesh.report.>', `$KV.${DECLARATIONS_BUCKET}.beta`, `$KV.${DECLARATIONS_BUCKET}.>`]) {
        const refusal = new Promise<Error | null>((resolve) => {
          const sub = host.subscribe(subject, { callback: (err) => resolve(err) });
          // Allowed, it would sit silently: give the refusal ten seconds to arrive.
          setTimeout(() => resolve(sub.isClosed() ? null : new Error(`allowed: ${subject}`)), 10_000);
        });
        const err = await refusal;
        expect(err?.message, subject).toMatch(PERMISSION);
      }
      // Nobody answers beta's status on alpha's behalf.
      await expect(control.request('mesh.node.beta.status', '', { timeout: 3000 })).rejects.toThrow(/no responders|timeout/i);
    });

    it('writing to or removing from the archives', async () => {
      await refused('a chunk', () => jetstream(host).publish(`$O.${ARCHIVES_BUCKET}.C.evil`, 'x', { timeout: 5000 }));
      await refused('a description', () => jetstream(host).publish(`$O.${ARCHIVES_BUCKET}.M.ZXZpbA==`, '{}', { timeout: 5000 }));
      await refused('a purge', () => jsm.streams.purge(`OBJ_${ARCHIVES_BUCKET}`));
      await refused('a deletion', () => jsm.streams.delete(`OBJ_${ARCHIVES_BUCKET}`));
    });

    it('and nothing the control side keeps was changed by any of it', async () => {
      await host.flush();
      expect(await snapshot()).toEqual(before);
    });
  });

  it('a forged report (the right subject, a wrong signature) and one signed by a key the node never enrolled are flagged by meshctl reports', async () => {
    const seed = readFileSync(join(work.dir, 'state', HOST_KEY_FILE), 'utf8').trim();
    const real = reportSigner(seed) as ReportSigner;
    const js = jetstream(control);
    const forged = Buffer.from(JSON.stringify({ node: 'alpha', sequence: 900, trigger: 'delivery', outcome: 'converged', steps: [] }));
    const h = natsHeaders();
    h.set(REPORT_KEY_HEADER, real.publicKey);
    h.set(REPORT_SIGNATURE_HEADER, real.headersFor(Buffer.from('other bytes'))[REPORT_SIGNATURE_HEADER]!);
    const stranger = reportSigner(newNkeySeed('node')) as ReportSigner;
    const other = Buffer.from(JSON.stringify({ node: 'alpha', sequence: 901, trigger: 'delivery', outcome: 'converged', steps: [] }));
    const h2 = natsHeaders();
    for (const [name, value] of Object.entries(stranger.headersFor(other))) h2.set(name, value);
    await js.publish('mesh.report.alpha', other, { headers: h2, msgID: 'alpha-901' });
    await js.publish('mesh.report.alpha', Buffer.from(JSON.stringify({ node: 'alpha', sequence: 902 })), { msgID: 'alpha-902' });
    // The forged one last: it is alpha's newest report, the one the fleet view reads.
    await js.publish('mesh.report.alpha', forged, { headers: h, msgID: 'alpha-900' });

    const { lines, stderr } = await reports('alpha');
    const bySequence = new Map(lines.map((l) => [l.sequence, l.trust]));
    expect(bySequence.get(1)?.verdict).toBe('verified');
    expect(bySequence.get(900)).toMatchObject({ verdict: 'bad-signature', key: real.publicKey });
    expect(bySequence.get(901)).toMatchObject({ verdict: 'unknown-key', key: stranger.publicKey, enrolled: real.publicKey });
    expect(bySequence.get(902)).toMatchObject({ verdict: 'unsigned' });
    expect(stderr).toMatch(/not verified: bad-signature/);
    expect(stderr).toMatch(/not verified: unknown-key/);
    // The fleet view holds alpha's newest report (the forged one) to the same key, and fails the node.
    const view = await runCli('meshctl', ['status', '--json', ...controlFlags]);
    const row = (JSON.parse(view.stdout) as { nodes: { node: string; signature?: string; problems: string[] }[] }).nodes.find((n) => n.node === 'alpha');
    expect(row).toMatchObject({ signature: 'failed', problems: expect.arrayContaining([expect.stringMatching(/signature does not verify/)]) });
  });

  it('a node never pinned is enrolled from its first signed report in the stream; a later report under another key is flagged', async () => {
    const js = jetstream(control);
    const publish = async (signer: ReportSigner, sequence: number) => {
      const bytes = Buffer.from(JSON.stringify({ node: 'gamma', sequence, trigger: 'apply', outcome: 'converged', steps: [] }));
      const h = natsHeaders();
      for (const [name, value] of Object.entries(signer.headersFor(bytes))) h.set(name, value);
      await js.publish('mesh.report.gamma', bytes, { headers: h, msgID: `gamma-${sequence}` });
    };
    const first = reportSigner(newNkeySeed('node')) as ReportSigner;
    const later = reportSigner(newNkeySeed('node')) as ReportSigner;
    await publish(first, 1);
    await publish(later, 2);
    const { lines } = await reports('gamma');
    expect(lines.map((l) => [l.sequence, l.trust.verdict, l.trust.enrolledBy])).toEqual([[1, 'verified', 'first-report'], [2, 'unknown-key', 'first-report']]);
  });
});
