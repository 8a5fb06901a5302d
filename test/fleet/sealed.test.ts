import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, type InitHost, type InitMesh } from '../support/mesh-init.js';
import { projectDir } from '../support/cli.js';
import { scratch } from '../support/tree.js';
import { startServe } from '../support/serve.js';
import { DECLARATIONS_BUCKET, ENROLMENTS_BUCKET, heartbeatSubject } from '../../src/link/wire.js';
import { SEALING_KEY_FILE } from '../../src/engine/report/sealing-key.js';
import { CurveSender, newCurveSeed, curvePublicKey } from '../../src/core/declaration/sealed.js';
import type { Enrolment } from '../../src/link/enrolment.js';
import { readMeshDir } from '../../src/control/setup/mesh-dir.js';

const unavailable = natsUnavailable();

/**
 * Every way a secret could be written down: as it is, in hex, and in base64 (both alphabets) at each of
 * the three alignments it may start at inside a longer encoded text (only the characters that depend on
 * the secret's bytes alone).
 */
function forms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const out = [secret, bytes.toString('hex')];
  for (let k = 0; k < 3; k++) {
    const encoded = Buffer.concat([Buffer.alloc(k), bytes]).toString('base64');
    const inner = encoded.slice(Math.ceil((k * 8) / 6), Math.floor(((k + bytes.length) * 8) / 6));
    out.push(inner, inner.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return out;
}

/** Every file under a directory (not following links), with its bytes. */
function* filesUnder(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = lstatSync(path);
    if (st.isDirectory()) yield* filesUnder(path);
    else if (st.isFile()) yield path;
  }
}

/** Where any form of the secret is found: files under the directories, and the texts named. */
function whereFound(secret: string, dirs: string[], texts: Record<string, string>): string[] {
  const needles = forms(secret).map((f) => Buffer.from(f, 'utf8'));
  const found: string[] = [];
  for (const dir of dirs) for (const path of filesUnder(dir)) if (needles.some((n) => readFileSync(path).includes(n))) found.push(path);
  for (const [name, text] of Object.entries(texts)) if (needles.some((n) => Buffer.from(text, 'utf8').includes(n))) found.push(name);
  return found;
}

async function until<T>(what: string, look: () => Promise<T | undefined> | T | undefined, ms = 60_000): Promise<T> {
  for (const started = Date.now(); ; await new Promise((r) => setTimeout(r, 100))) {
    const seen = await look();
    if (seen !== undefined && seen !== false) return seen;
    if (Date.now() - started > ms) throw new Error(`waited ${ms} ms for ${what}`);
  }
}

describe.skipIf(unavailable !== undefined && !process.env.CI)(`secrets sealed to each host, on a real nats-server and real daemons${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let mesh: InitMesh;
  let control: NatsConnection;
  let web: InitHost;
  /** Where the operator's own files are: outside everything searched (the operator's file holds the secret, as it should). */
  const desk = scratch('mesh-host-desk-');
  /** What every command and page answered, searched with the disks. */
  const said: Record<string, string> = {};
  const meshctl = async (name: string, args: string[]) => {
    const r = await mesh.meshctl(args);
    said[`meshctl ${name} (stdout)`] = r.stdout;
    said[`meshctl ${name} (stderr)`] = r.stderr;
    return r;
  };
  const declaration = (secret: string, canary: string, node = 'web-1') => {
    const path = join(desk.dir, `${randomBytes(4).toString('hex')}.json`);
    writeFileSync(
      path,
      JSON.stringify({
        version: 1,
        node,
        mode: 'converged',
        resources: [
          { type: 'file', id: 'token', path: '/srv/token', content: secret, sensitive: true, mode: '0640' },
          { type: 'file', id: 'canary', path: '/srv/canary', content: canary },
        ],
      }),
    );
    return path;
  };
  const reportsOf = async (node: string) => {
    const r = await meshctl(`reports ${node} ${Date.now()}`, ['reports', '--node', node]);
    return r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { outcome: string; declaration: { sequence: number } | null; reason?: string; error?: { message: string }; said: string[]; details?: string[] });
  };
  const enrolmentOf = async (node: string) => (await (await new Kvm(control).open(ENROLMENTS_BUCKET)).get(node))?.json<Enrolment>();

  beforeAll(async () => {
    mesh = await initMesh({ servers: 1 });
    control = await mesh.control();
    web = await mesh.enrol('web-1', { labels: ['role=web'] });
    await until('the genesis report', async () => (await reportsOf('web-1')).length > 0);
  }, 180_000);
  afterAll(async () => {
    await mesh?.close();
    desk.cleanup();
  });

  it('the curve key made at enrolment is kept 0600 in the state directory and recorded, signed, beside the pinned node key', async () => {
    const seedPath = join(web.state, SEALING_KEY_FILE);
    expect(statSync(seedPath).mode & 0o777).toBe(0o600);
    const enrolment = (await enrolmentOf('web-1'))!;
    expect(enrolment.by).toBe('bundle');
    expect(enrolment.sealing?.key).toBe(curvePublicKey(readFileSync(seedPath, 'utf8')));
  });

  it('send, plan and rollout of a random secret: found only in the host file, with its mode; drift of it found and put back; nothing else holds it', async () => {
    const first = randomBytes(24).toString('hex');
    const second = randomBytes(24).toString('hex');
    const canary = randomBytes(24).toString('hex');
    const sent = await meshctl('send', ['send', 'web-1', declaration(first, canary)]);
    expect(sent.code, sent.stderr).toBe(0);
    const token = join(web.root, 'srv/token');
    await until('the first secret written', () => existsSync(token) && readFileSync(token, 'utf8') === first);
    expect(statSync(token).mode & 0o777).toBe(0o640);

    const next = declaration(second, canary);
    const plan = await meshctl('plan', ['plan', next, '--all', '--diff']);
    expect(plan.code, plan.stderr + plan.stdout).toBe(2);
    expect(plan.stdout).toContain('sensitive: would change');
    const planJson = await meshctl('plan json', ['plan', next, '--all', '--diff', '--json']);
    expect(planJson.stdout).toContain('"sensitive":true');

    const rollout = await meshctl('rollout', ['rollout', next, '--all', '--waves', '100%', '--wait', '60s']);
    expect(rollout.code, rollout.stderr + rollout.stdout).toBe(0);
    expect(readFileSync(token, 'utf8')).toBe(second);
    expect(statSync(token).mode & 0o777).toBe(0o640);

    // Unchanged: the same file again is "skipped", its box reused, though meshctl cannot keep the plain text.
    const again = await meshctl('send again', ['send', next, '--all']);
    expect(again.stdout).toContain('skipped');

    // Drift of the sealed file: found by the watcher, put back, said without a hint of either content.
    const reportsBefore = (await reportsOf('web-1')).length;
    writeFileSync(token, 'changed by hand\n');
    await until('the sealed file put back', () => readFileSync(token, 'utf8') === second);
    const drift = await until('the drift report', async () => (await reportsOf('web-1')).slice(reportsBefore).find((r) => r.said.some((s) => s.includes('/srv/token'))));
    expect(JSON.stringify(drift)).not.toContain('changed by hand');

    // Everything an operator or a reader of the disks can see.
    said['meshctl status'] = (await meshctl('status', ['status'])).stdout;
    said['meshctl status web-1'] = (await meshctl('status web-1', ['status', 'web-1'])).stdout;
    const served = await startServe(['--mesh', mesh.dir]);
    try {
      for (const path of ['/', '/api/node/web-1', '/api/node/web-1/status', '/api/rollouts']) said[`page ${path}`] = await (await fetch(served.url + path.slice(1))).text();
      const rollouts = JSON.parse(said['page /api/rollouts']!) as Array<{ id: string }>;
      for (const r of rollouts) said[`page rollout ${r.id}`] = await (await fetch(`${served.url}api/rollout/${r.id}`)).text();
      said['page /events'] = await firstEvents(`${served.url}events?node=web-1`);
    } finally {
      await served.stop();
      said['meshctl serve (log)'] = served.log();
    }
    said['host log'] = web.log();
    // The mesh directory holds the servers' JetStream stores; the host's directory its root, state, bundle and credentials.
    const storeDirs = [...readFileSync(join(mesh.dir, 'nats-server.conf'), 'utf8').matchAll(/store_dir:\s*"?([^"\n]+)"?/g)].map((m) => m[1]!);
    expect(storeDirs.length).toBe(1);
    const hostDir = join(web.root, '..');
    const searched = [mesh.dir, hostDir, ...storeDirs.filter((d) => !d.startsWith(mesh.dir))];
    // The search finds what is there: the canary (not sensitive) is in the store, the bucket and the host's store.
    expect(whereFound(canary, searched, said).some((p) => storeDirs.some((d) => p.startsWith(d)))).toBe(true);
    expect(whereFound(second, searched, said).map((p) => relative(hostDir, p))).toEqual(['root/srv/token']);
    expect(whereFound(first, searched, said)).toEqual([]);
    // The key holds the value sealed to the host, as the wire describes it.
    const held = JSON.parse(Buffer.from((await (await new Kvm(control).open(DECLARATIONS_BUCKET)).get('web-1'))!.json<{ payload: string }>().payload, 'base64').toString()) as { resources: Array<{ id: string; content: unknown }> };
    expect(held.resources.find((r) => r.id === 'token')!.content).toMatchObject({ sealed: 'xkv1', to: (await enrolmentOf('web-1'))!.sealing!.key });
  }, 300_000);

  it('refusals: a value sealed for another host, a box that does not open; nothing touched, the resource named', async () => {
    const operatorSeed = readFileSync(readMeshDir(mesh.dir).key, 'utf8').trim();
    const sender = new CurveSender(operatorSeed);
    const mine = (await enrolmentOf('web-1'))!.sealing!.key;
    const other = curvePublicKey(newCurveSeed())!;
    const cases = [
      { name: 'another host', content: sender.seal(Buffer.from('x'), other)!, words: 'sealed for another host' },
      { name: 'a damaged box', content: damaged(sender.seal(Buffer.from('y'), mine)!), words: 'does not open' },
    ];
    let sequence = 100;
    for (const c of cases) {
      const reportsBefore = (await reportsOf('web-1')).length;
      const plain = join(desk.dir, `${c.name.replace(/ /g, '-')}.json`);
      writeFileSync(plain, JSON.stringify({ version: 1, node: 'web-1', mode: 'converged', sequence: sequence++, resources: [
        { type: 'file', id: 'token', path: '/srv/token', content: sender.seal(readFileSync(join(web.root, 'srv/token')), mine), sensitive: true, mode: '0640' },
        { type: 'file', id: 'new-secret', path: '/srv/new-secret', content: c.content, sensitive: true },
        { type: 'directory', id: 'untouched', path: '/srv/untouched' },
      ] }));
      // Signed as it stands (meshctl sign), so meshctl's sealing does not mend it: what another control plane might send.
      const envelope = await meshctl(`sign ${c.name}`, ['sign', plain]);
      expect(envelope.code, envelope.stderr).toBe(0);
      const signed = join(desk.dir, `${c.name.replace(/ /g, '-')}.env.json`);
      writeFileSync(signed, envelope.stdout);
      expect((await meshctl(`send ${c.name}`, ['send', 'web-1', signed])).code).toBe(0);
      const refusal = await until(`the refusal of ${c.name}`, async () => (await reportsOf('web-1')).slice(reportsBefore).find((r) => r.outcome === 'refused'));
      const text = JSON.stringify(refusal);
      expect(text).toContain('new-secret');
      expect(text).toContain(c.words);
      expect(existsSync(join(web.root, 'srv/new-secret'))).toBe(false);
      expect(existsSync(join(web.root, 'srv/untouched'))).toBe(false);
    }
    // Back to a declaration the host takes, sealed by meshctl.
    const secret = readFileSync(join(web.root, 'srv/token'), 'utf8');
    expect((await meshctl('send good', ['send', 'web-1', declaration(secret, 'c')])).code).toBe(0);
    await until('the good declaration converged', async () => (await reportsOf('web-1')).at(-1)?.outcome === 'converged');
  }, 180_000);

  it('a sensitive value for a node with no curve key recorded is refused by meshctl before anything is sent, naming the resource', async () => {
    // The bundle seals its first declaration's secret to the curve key made with the node's key; genesis opens it.
    const boot = randomBytes(16).toString('hex');
    const old = await mesh.enrol('old-1', { start: false, resources: [{ type: 'file', id: 'boot', path: '/srv/boot', content: boot, sensitive: true, mode: '0600' }] });
    expect(readFileSync(join(old.root, 'srv/boot'), 'utf8')).toBe(boot);
    expect(statSync(join(old.root, 'srv/boot')).mode & 0o777).toBe(0o600);
    expect(whereFound(boot, [old.state, mesh.dir], {}).concat(whereFound(boot, [], { bundle: readFileSync(join(old.root, '..', 'bundle.json'), 'utf8') }))).toEqual([]);
    // As a node enrolled before curve keys: its enrolment has none, and it has not reported one.
    const kv = await new Kvm(control).open(ENROLMENTS_BUCKET);
    const { sealing: _, ...enrolment } = (await enrolmentOf('old-1'))!;
    await kv.put('old-1', JSON.stringify(enrolment));
    const keyBefore = (await (await new Kvm(control).open(DECLARATIONS_BUCKET)).get('old-1'))?.revision;
    const r = await meshctl('send old-1', ['send', 'old-1', declaration(randomBytes(8).toString('hex'), 'c', 'old-1')]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('old-1 has no curve key recorded');
    expect(r.stderr).toContain('token');
    expect((await (await new Kvm(control).open(DECLARATIONS_BUCKET)).get('old-1'))?.revision).toBe(keyBefore);
    // Started, the host reports its curve key (it has one from its bundle), and the next send seals to it.
    const run = spawn(process.execPath, [join(projectDir, 'bin/mesh-host'), 'run', ...old.flags, '--log-level', 'warn'], { stdio: 'ignore' });
    try {
      const secret = randomBytes(12).toString('hex');
      await until('a send to old-1 once it reported', async () => (await mesh.meshctl(['send', 'old-1', declaration(secret, 'c', 'old-1')])).code === 0, 60_000);
      await until('the secret on old-1', () => existsSync(join(old.root, 'srv/token')) && readFileSync(join(old.root, 'srv/token'), 'utf8') === secret);
      expect((await enrolmentOf('old-1'))!.sealing?.key).toBe(curvePublicKey(readFileSync(join(old.state, SEALING_KEY_FILE), 'utf8')));
    } finally {
      const exit = new Promise((r) => run.once('exit', r));
      run.kill('SIGTERM');
      await exit;
    }
  }, 180_000);

  it('a host whose curve key changed makes a new one at its start, beats it, and meshctl reseal NODE seals its values again to it', async () => {
    const token = join(web.root, 'srv/token');
    const secret = readFileSync(token, 'utf8');
    await web.stop();
    rmSync(join(web.state, SEALING_KEY_FILE));
    writeFileSync(token, 'drifted while down\n');
    const beats = control.subscribe(heartbeatSubject('web-1'));
    const run = spawn(process.execPath, [join(projectDir, 'bin/mesh-host'), 'run', ...web.flags, '--log-level', 'warn'], { stdio: 'ignore' });
    try {
      const newKey = await until('a new curve key made at start', () => existsSync(join(web.state, SEALING_KEY_FILE)) && curvePublicKey(readFileSync(join(web.state, SEALING_KEY_FILE), 'utf8')));
      for await (const m of beats) if ((m.json<{ sealing?: { key: string } }>().sealing?.key ?? '') === newKey) break;
      const r = await meshctl('reseal', ['reseal', 'web-1']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('resealed');
      await until('the secret put back, opened with the new key', () => readFileSync(token, 'utf8') === secret);
      expect((await enrolmentOf('web-1'))!.sealing?.key).toBe(newKey);
      const again = await meshctl('reseal again', ['reseal', 'web-1']);
      expect(again.stdout).toContain('nothing was put');
    } finally {
      beats.unsubscribe();
      const exit = new Promise((r) => run.once('exit', r));
      run.kill('SIGTERM');
      await exit;
    }
  }, 180_000);
});

function damaged(sealed: { box: string }): typeof sealed & object {
  const bytes = Buffer.from(sealed.box, 'base64');
  bytes[bytes.length - 3]! ^= 0x40;
  return { ...sealed, box: bytes.toString('base64') };
}

/** The page's event stream, from its start until its first snapshot has come (or two seconds). */
async function firstEvents(url: string): Promise<string> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 2_000);
  let text = '';
  try {
    const res = await fetch(url, { signal: controller.signal });
    const decoder = new TextDecoder();
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk);
      if (text.includes('event: snapshot') && text.includes('\n\n')) break;
    }
  } catch (err) {
    if ((err as Error).name !== 'AbortError') throw err;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return text;
}
