import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, untilFile, type InitHost, type InitMesh } from '../support/mesh-init.js';
import { HISTORY_STREAM } from '../../src/link/wire.js';

const unavailable = natsUnavailable();

interface Entry {
  mark?: { sequence: number };
  at: string;
  operation: string;
  signedBy?: string;
  outcome?: { kind: string; outcome?: string };
}

describe.skipIf(unavailable !== undefined && !process.env.CI)(`meshctl history, show, diff and rollback against a mesh made by meshctl init and real daemons${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let mesh: InitMesh;
  let control: NatsConnection;
  let web3: InitHost;
  let web1: InitHost;
  const declaration = (name: string, resources: object[]) => {
    const path = join(mesh.dir, '..', `${name}.json`);
    writeFileSync(path, JSON.stringify({ version: 1, mode: 'converged', resources }));
    return path;
  };
  const conf = (content: string) => ({ type: 'file', id: 'conf', path: '/srv/app.conf', content });
  const secret = (content: string) => ({ type: 'file', id: 'token', path: '/srv/token', content, mode: '0600', sensitive: true });
  const meshctl = async (args: string[], code = 0) => {
    const r = await mesh.meshctl([...args, '--log-level', 'warn']);
    expect(r.code, `meshctl ${args.join(' ')}\n${r.stderr}\n${r.stdout}`).toBe(code);
    return r;
  };
  const historyOf = async (node: string) => (await meshctl(['history', node, '--json'])).stdout.trim().split('\n').map((l) => JSON.parse(l) as Entry);
  /** Waits until the history holds what the node reported on its newest put (the report is the event). */
  const untilReported = async (node: string) => {
    const started = Date.now();
    for (;;) {
      const entries = await historyOf(node);
      if (entries.at(-1)?.outcome?.kind === 'reported') return entries;
      if (Date.now() - started > 30_000) throw new Error(`no report on ${node}'s newest declaration:\n${JSON.stringify(entries)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  beforeAll(async () => {
    mesh = await initMesh();
    // The retention as `meshctl init --keep-history 90d` writes it: the history the mesh makes keeps that long.
    const meshFile = join(mesh.dir, 'mesh.json');
    writeFileSync(meshFile, JSON.stringify({ ...(JSON.parse(readFileSync(meshFile, 'utf8')) as object), keepHistory: '90d' }));
    control = await mesh.control();
    web3 = await mesh.enrol('web-3', { labels: ['role=web'] });
    web1 = await mesh.enrol('web-1', { labels: ['role=web'] });
  }, 180_000);
  afterAll(async () => {
    await mesh?.close();
  });

  it('"what did web-3 get last Tuesday, and put it back": history over a window of time, then rollback --to, in two commands; the node converges to it again under a new number', async () => {
    await meshctl(['send', declaration('v1', [conf('v = 1\n'), secret('hunter2\n')]), '--select', 'role=web']);
    await untilFile(web3, 'srv/app.conf', 'v = 1\n');
    const v1 = (await untilReported('web-3')).at(-1)!;
    // The window: everything web-3 was given from just before v1 to just after it ("last Tuesday").
    const since = new Date(Date.parse(v1.at) - 1).toISOString();
    const until = new Date(Date.parse(v1.at) + 1).toISOString();
    await meshctl(['send', declaration('v2', [conf('v = 2\n'), secret('hunter3\n')]), '--nodes', 'web-3']);
    await untilFile(web3, 'srv/app.conf', 'v = 2\n');
    await untilReported('web-3');

    // One: what it got then, who signed it, and that it converged.
    const history = await meshctl(['history', 'web-3', '--since', since, '--until', until, '--text']);
    const operatorKey = readFileSync(join(mesh.dir, 'operator.pub'), 'utf8').trim();
    expect(history.stdout).toMatch(/^web-3: 1 of 3 declarations kept \(the mesh keeps them 90d\)$/m);
    expect(history.stdout).toMatch(new RegExp(`^sequence ${v1.mark!.sequence} +${v1.at}  converged \\(report \\d+\\)  signed by ${operatorKey.slice(0, 8)}…${operatorKey.slice(-4)}  2 resources  \\+conf \\+token$`, 'm'));
    expect(history.stdout).not.toMatch(/sequence 3/);
    // Which declarations changed the token: the first that added it, the one that changed it.
    const token = (await historyOf('web-3')).length;
    expect(token).toBe(3);
    const changedToken = (await meshctl(['history', 'web-3', '--resource', '/srv/token', '--json'])).stdout.trim().split('\n').map((l) => (JSON.parse(l) as Entry).mark?.sequence);
    expect(changedToken).toEqual([2, 3]);
    // Two: put it back.
    const back = await meshctl(['rollback', 'web-3', '--to', String(v1.mark!.sequence)]);
    expect(back.stdout).toMatch(new RegExp(`^web-3 {2}sent +sequence 4 \\(revision \\d+\\): sequence ${v1.mark!.sequence} of ${v1.at} again$`, 'm'));
    await untilFile(web3, 'srv/app.conf', 'v = 1\n');
    expect(readFileSync(join(web3.root, 'srv/token'), 'utf8')).toBe('hunter2\n');
    const after = await untilReported('web-3');
    expect(after.map((e) => [e.mark?.sequence, e.outcome?.outcome])).toEqual([
      [1, 'converged'],
      [2, 'converged'],
      [3, 'converged'],
      [4, 'converged'],
    ]);
    expect(after.at(-1)!.signedBy).toBe(operatorKey);
    // web-1 was not touched by web-3's rollback.
    expect(readFileSync(join(web1.root, 'srv/app.conf'), 'utf8')).toBe('v = 1\n');
  }, 120_000);

  it('show never shows a sensitive value, of now or of an earlier sequence; diff says the sensitive content changed and shows the rest', async () => {
    const now = await meshctl(['show', 'web-3', '--text']);
    expect(now.stdout).toMatch(/^web-3, sequence 4: put .*, signed by O[A-Z2-7]{55}, sha256:[0-9a-f]{64}$/m);
    expect(now.stdout).toMatch(/outcome: converged \(report \d+\); its key holds it now/);
    expect(now.stdout).toContain('"content": "v = 1\\n"');
    expect(now.stdout).toContain('"content": "(sensitive: not shown)"');
    const earlier = JSON.parse((await meshctl(['show', 'web-3', '--sequence', '3', '--json'])).stdout) as { declaration: { sequence: number; resources: Array<{ content: string }> } };
    expect(earlier.declaration.sequence).toBe(3);
    expect(earlier.declaration.resources.map((r) => r.content)).toEqual(['v = 2\n', '(sensitive: not shown)']);
    for (const out of [now.stdout, JSON.stringify(earlier)]) expect(out).not.toMatch(/hunter/);

    const diff = await meshctl(['diff', 'web-3', '3', '4', '--text']);
    expect(diff.stdout.trimEnd().split('\n').slice(2)).toEqual(['~ file conf /srv/app.conf', '    content:', '      @@ -1,1 +1,1 @@', '      -v = 2', '      +v = 1', '~ file token /srv/token', '    content: changed (sensitive: not shown)']);
    expect(diff.stdout).not.toMatch(/hunter/);
    const missing = await meshctl(['show', 'web-3', '--sequence', '99'], 3);
    expect(missing.stderr).toMatch(/the mesh keeps no declaration of web-3 with sequence 99/);
  }, 60_000);

  it('rollback with no --to puts back the newest earlier declaration the node converged to; --dry-run asks the host for its plan and sends nothing', async () => {
    // web-1 has 1 (genesis), 2 (v1), then 3 (v7), converged; then a broken one is refused: its path is taken by a file.
    await meshctl(['send', declaration('v7', [conf('v = 7\n')]), '--nodes', 'web-1']);
    await untilFile(web1, 'srv/app.conf', 'v = 7\n');
    await untilReported('web-1');
    await meshctl(['send', declaration('v8-bad', [conf('v = 8\n'), { type: 'file', id: 'broken', path: '/srv/app.conf/inside', content: 'x' }]), '--nodes', 'web-1']);
    const bad = (await untilReported('web-1')).at(-1)!;
    expect(bad.mark!.sequence).toBe(4);
    expect(bad.outcome?.outcome).not.toBe('converged');

    // --dry-run: the host's plan for what would be put back, and nothing sent. Sequence 2 would change the file back.
    const plan = await meshctl(['rollback', 'web-1', '--to', '2', '--dry-run', '--diff'], 2);
    expect(plan.stdout).toMatch(/^web-1: would put back sequence 2 \(of .*\)$/m);
    expect(plan.stdout).toMatch(/^plan for 1 node: 1 would change/m);
    expect(plan.stdout).toMatch(/^-v = 7$/m);
    expect(plan.stdout).toMatch(/^\+v = 1$/m);
    expect((await historyOf('web-1')).at(-1)!.mark?.sequence).toBe(4);

    // No --to: the newest one that converged and differs from the key's, sequence 3.
    const back = await meshctl(['rollback', 'web-1']);
    expect(back.stdout).toMatch(/^web-1 {2}sent +sequence 5 \(revision \d+\): sequence 3 of .* again$/m);
    const entries = await untilReported('web-1');
    expect(entries.at(-1)!.mark?.sequence).toBe(5);
    expect(entries.at(-1)!.outcome?.outcome).toBe('converged');
    expect(readFileSync(join(web1.root, 'srv/app.conf'), 'utf8')).toBe('v = 7\n');
  }, 90_000);

  it('rollback --rollout ID puts each node the rollout reached back to what it held when the rollout began', async () => {
    const r = await meshctl(['rollout', declaration('v5', [conf('v = 5\n')]), '--select', 'role=web', '--waves', '100%', '--wait', '30s', '--json']);
    const id = (JSON.parse(r.stdout.split('\n')[0]!) as { id: string }).id;
    await untilFile(web3, 'srv/app.conf', 'v = 5\n');
    await untilFile(web1, 'srv/app.conf', 'v = 5\n');
    const back = await meshctl(['rollback', '--rollout', id, '--json']);
    const lines = back.stdout.trim().split('\n').map((l) => JSON.parse(l) as { node: string; outcome: string; back: { sequence: number } });
    expect(lines.map((l) => [l.node, l.outcome]).sort()).toEqual([
      ['web-1', 'sent'],
      ['web-3', 'sent'],
    ]);
    await untilFile(web3, 'srv/app.conf', 'v = 1\n');
    await untilFile(web1, 'srv/app.conf', 'v = 7\n');
  }, 90_000);

  it('rollback --waves goes as a rollout: each node its own earlier declaration, wave by wave, its record kept', async () => {
    const r = await meshctl(['rollback', '--select', 'role=web', '--to', '2', '--waves', '1,100%', '--wait', '30s', '--json']);
    const events = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { event: string; nodes?: number; waves?: number[]; converged?: number; node?: string });
    expect(events[0]).toMatchObject({ event: 'started', nodes: 2, waves: [1, 1] });
    expect(events.at(-1)).toMatchObject({ event: 'done', converged: 2 });
    await untilFile(web1, 'srv/app.conf', 'v = 1\n');
    const entries = await untilReported('web-1');
    expect(entries.at(-1)!.outcome?.outcome).toBe('converged');
  }, 90_000);

  it('the history is a stream of the mesh with the retention the operator sets, and it changes when asked', async () => {
    const jsm = await jetstreamManager(control);
    expect((await jsm.streams.info(HISTORY_STREAM)).config.max_age).toBe(90 * 86_400 * 1e9);
    await meshctl(['history', 'web-3', '--keep-history', '30d']);
    expect((await jsm.streams.info(HISTORY_STREAM)).config.max_age).toBe(30 * 86_400 * 1e9);
    // A send (with the mesh directory's defaults, 90d among them) leaves the operator's choice as it is.
    await meshctl(['send', declaration('v6', [conf('v = 6\n')]), '--nodes', 'web-3']);
    expect((await jsm.streams.info(HISTORY_STREAM)).config.max_age).toBe(30 * 86_400 * 1e9);
    const wrong = await meshctl(['history', 'web-3', '--keep-history', 'soon'], 2);
    expect(wrong.stderr).toMatch(/--keep-history soon: how long the mesh keeps each declaration/);
  }, 60_000);
});
