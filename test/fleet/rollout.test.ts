import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, untilFile, type InitHost, type InitMesh } from '../support/mesh-init.js';
import { projectDir, runCli } from '../support/cli.js';
import { reportsOf } from '../support/daemon.js';
import { SimHosts } from '../support/sim-hosts.js';
import { orderNodes } from '../../src/control/fleet/rollout.js';
import { describeEvent, type RolloutEvent } from '../../src/control/fleet/rollout-view.js';
import { ROLLOUTS_BUCKET } from '../../src/link/wire.js';

const unavailable = natsUnavailable();

/** A meshctl rollout as its own process: its JSON events as they come, its exit, and a way to kill it. */
function rolloutProcess(mesh: InitMesh, args: string[]) {
  const child = spawn(process.execPath, [join(projectDir, 'bin/meshctl'), 'rollout', ...args, '--json', '--mesh', mesh.dir, '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const events: RolloutEvent[] = [];
  let out = '';
  let err = '';
  const waiters: Array<() => void> = [];
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    const lines = out.split('\n');
    out = lines.pop()!;
    // One event a line; a refusal before the rollout starts is the house's JSON error, said whole.
    for (const line of lines.filter((l) => l.startsWith('{"event"'))) events.push(JSON.parse(line) as RolloutEvent);
    for (const w of waiters.splice(0)) w();
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  /** Waits for the event the test needs (never a fixed sleep), failing with what was said when the process ends first. */
  async function until<E extends RolloutEvent>(test: (e: RolloutEvent) => e is E, timeoutMs = 60_000): Promise<E> {
    const started = Date.now();
    for (;;) {
      const found = events.find(test);
      if (found) return found;
      if (child.exitCode !== null || child.signalCode !== null || Date.now() - started > timeoutMs) throw new Error(`no such event (exit ${child.exitCode}):\n${events.map((e) => JSON.stringify(e)).join('\n')}\n${err}`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }
  return { child, events, exit, until, stderr: () => err };
}

const is = <K extends RolloutEvent['event']>(kind: K, node?: string) => (e: RolloutEvent): e is Extract<RolloutEvent, { event: K }> => e.event === kind && (node === undefined || (e as { node?: string }).node === node);

/** How many lines of the host's log match, so far. */
const logCount = (host: InitHost, pattern: RegExp) => (host.log().match(new RegExp(pattern.source, 'g')) ?? []).length;

async function untilLog(host: InitHost, what: string, pattern: RegExp, count: number, timeoutMs = 30_000): Promise<void> {
  const started = Date.now();
  while (logCount(host, pattern) < count) {
    if (Date.now() - started > timeoutMs) throw new Error(`${host.node}: no ${what} in its log:\n${host.log().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(unavailable !== undefined && !process.env.CI)(`meshctl rollout over 2 real hosts and 18 simulated ones, on a nats-server made by meshctl init${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const names = Array.from({ length: 20 }, (_, i) => `node-${String(i + 1).padStart(2, '0')}`);
  const ordered = orderNodes(names);
  // The first node of the order and the fifth are real daemons: the fifth is the one that fails.
  const [firstReal, fifth] = [ordered[0]!, ordered[4]!];
  const simulated = ordered.filter((n) => n !== firstReal && n !== fifth);
  let mesh: InitMesh;
  let control: NatsConnection;
  let sims: SimHosts;
  const hosts: Record<string, InitHost> = {};
  const file = (name: string, content: string) => {
    const path = join(mesh.dir, '..', `${name}.json`);
    writeFileSync(path, JSON.stringify({ version: 1, mode: 'converged', resources: [{ type: 'file', id: 'conf', path: '/srv/app.conf', content }] }));
    return path;
  };
  const rollouts = async () => new Kvm(control).open(ROLLOUTS_BUCKET);

  beforeAll(async () => {
    mesh = await initMesh();
    control = await mesh.control();
    for (const node of [firstReal, fifth]) hosts[node] = await mesh.enrol(node, { labels: ['role=app'] });
    sims = await SimHosts.make(control, simulated, { labels: () => ({ role: 'app' }) });
    await sims.listen();
  }, 180_000);
  afterAll(async () => {
    sims?.close();
    await mesh?.close();
  });

  it('3 waves over 20 where the fifth host fails (a real daemon whose path is a directory refuses the plan): it halts naming the node, its resource and error, exits 1, and the hosts of the later wave are sent nothing', async () => {
    // The fifth host's path is taken by a directory: its file resource fails there.
    mkdirSync(join(hosts[fifth]!.root, 'srv/app.conf'), { recursive: true });
    const r = rolloutProcess(mesh, [file('v1', 'v = 1\n'), '--all', '--waves', '2,25%,100%', '--wait', '60s']);
    expect(await r.exit, r.stderr()).toBe(1);
    const started = r.events.find(is('started'))!;
    expect(started).toMatchObject({ nodes: 20, waves: [2, 3, 15], haltOn: ['failed', 'refused', 'silent'] });
    const halted = r.events.find(is('halted'))!;
    expect(halted).toMatchObject({ id: started.id, wave: 2, of: 3, node: fifth, phase: 'refused', untouched: 15 });
    expect(halted.error).toMatch(/conf \(\/srv\/app\.conf\): \/srv\/app\.conf is not a regular file/);
    await untilFile(hosts[firstReal]!, 'srv/app.conf', 'v = 1\n');
    for (const node of ordered.slice(1, 4)) expect(sims.deliveries(node).map((d) => d.resources)).toHaveLength(1);
    for (const node of ordered.slice(5)) expect(sims.deliveries(node), node).toEqual([]);
    const kept = (await (await rollouts()).get(started.id))!.json<{ status: string; halt: { node: string } }>();
    expect(kept).toMatchObject({ status: 'halted', halt: { node: fifth } });

    // A second rollout for the same nodes is refused while the first is unfinished.
    const second = rolloutProcess(mesh, [file('v1b', 'v = 1b\n'), '--nodes', ordered[10]!]);
    expect(await second.exit).toBe(3);
    expect(second.stderr()).toMatch(new RegExp(`${ordered[10]} is in rollout ${started.id} \\(halted at wave 2 of 3`));
  }, 180_000);

  it('resumed after the fix: the failed host is sent its copy again and converges, nothing converged is sent again, and the last wave goes', async () => {
    const kv = await rollouts();
    const halted = [] as string[];
    for await (const key of await kv.keys()) if (key !== 'claims' && (await kv.get(key))!.json<{ status: string }>().status === 'halted') halted.push(key);
    expect(halted).toHaveLength(1);
    rmSync(join(hosts[fifth]!.root, 'srv/app.conf'), { recursive: true });
    const r = rolloutProcess(mesh, ['--resume', halted[0]!]);
    expect(await r.exit, r.stderr()).toBe(0);
    expect(r.events.filter(is('sent')).map((e) => e.node).sort()).toEqual([fifth, ...ordered.slice(5)].sort());
    expect(r.events.find(is('sent', fifth))).toMatchObject({ again: true });
    expect(r.events.find(is('done'))).toMatchObject({ nodes: 20, converged: 20 });
    await untilFile(hosts[fifth]!, 'srv/app.conf', 'v = 1\n');
    for (const node of simulated) expect(sims.deliveries(node), node).toHaveLength(1);
  }, 180_000);

  it('a paused host is waited for, not failed, and said so; when it resumes it applies the newest delivery and the rollout goes on', async () => {
    const pausedNode = ordered[2]!;
    sims.pause(pausedNode, { reason: 'disk swap', by: 'alice', since: new Date().toISOString() });
    const r = rolloutProcess(mesh, [file('v2', 'v = 2\n'), '--all', '--waves', '5,100%', '--wait', '3s']);
    const paused = await r.until(is('paused', pausedNode));
    expect(paused).toMatchObject({ reason: 'disk swap', by: 'alice' });
    // Well past --wait: still waiting, not silent.
    await r.until((e): e is RolloutEvent => e.event === 'node' && e.node === ordered[0]);
    await new Promise((resolve) => setTimeout(resolve, 4000));
    expect(r.events.filter((e) => e.event === 'node' && e.node === pausedNode)).toEqual([]);
    expect(r.child.exitCode).toBe(null);
    await sims.resume(pausedNode);
    expect(await r.exit, r.stderr()).toBe(0);
    expect(r.events.find(is('node', pausedNode))).toMatchObject({ phase: 'converged' });
    expect(r.events.find(is('done'))).toMatchObject({ converged: 20 });
  }, 180_000);

  it('a host that converged but held a restart off for its lock is waited for, not counted done, and said so; its report once the restart is made settles it', async () => {
    const lockedNode = ordered[3]!;
    const since = new Date().toISOString();
    const until = new Date(Date.now() + 600_000).toISOString();
    sims.behave(lockedNode, { defer: { state: 'held', path: '/run/app/busy.lock', pid: 4242, since, waitingSince: since, until } });
    const r = rolloutProcess(mesh, [file('v2-locked', 'v = 2, locked\n'), '--all', '--waves', '5,100%', '--wait', '3s']);
    const deferred = await r.until(is('deferred', lockedNode));
    expect(deferred.deferred).toEqual([{ resource: 'app', pid: 4242, since, until }]);
    expect(describeEvent(deferred)).toBe(`${lockedNode}  converged but for app deferred: locked by PID 4242 since ${since}, at most until ${until}; waiting for its report of it (a held restart is not a failure)`);
    // The record says why it waits and from when its wait counts: the lock's bound, ten minutes on.
    const id = (await r.until(is('started'))).id;
    const kept = async () => (await (await rollouts()).get(id))?.json<{ nodes: Record<string, { phase: string; waitFromMs?: number; deferred?: unknown }>; wave: number }>();
    for (let record = await kept(); !record?.nodes[lockedNode]?.deferred; record = await kept()) await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await kept())!.nodes[lockedNode]).toMatchObject({ phase: 'sent', waitFromMs: Date.parse(until) });
    expect(r.events.filter((e) => e.event === 'node' && e.node === lockedNode)).toEqual([]);
    expect(r.events.find(is('wave-done'))).toBeUndefined();
    // The fleet view says what waits under the node, which stays converged.
    const view = await runCli('meshctl', ['status', '--json', '--mesh', mesh.dir, '--log-level', 'warn']);
    const row = (JSON.parse(view.stdout) as { nodes: Array<{ node: string; state: string; problems: string[] }> }).nodes.find((n) => n.node === lockedNode);
    expect(row, view.stderr).toMatchObject({ state: 'converged', problems: [`app deferred: locked by PID 4242 since ${since}, at most until ${until}`] });
    // The lock goes: the host restarts and reports again; that report settles the node and the rollout goes on.
    sims.behave(lockedNode, 'converge');
    await sims.release(lockedNode);
    expect(await r.exit, r.stderr()).toBe(0);
    expect(r.events.find(is('node', lockedNode))).toMatchObject({ phase: 'converged' });
    expect(r.events.find(is('done'))).toMatchObject({ converged: 20 });
  }, 180_000);

  it('meshctl rollout killed with SIGKILL mid-wave, then --resume: no send lost, none repeated', async () => {
    const wave2 = ordered.slice(1, 10).filter((n) => n !== fifth);
    for (const node of wave2) sims.behave(node, 'hold');
    const r = rolloutProcess(mesh, [file('v3', 'v = 3\n'), '--all', '--waves', '1,50%,100%', '--wait', '60s']);
    for (const node of wave2) await r.until(is('sent', node));
    const started = r.events.find(is('started'))!;
    r.child.kill('SIGKILL');
    await r.exit;
    // Reports made while no meshctl listened are found on resume.
    for (const node of wave2.slice(0, 3)) await sims.release(node);
    for (const node of wave2) sims.behave(node, 'converge');
    const resumed = rolloutProcess(mesh, ['--resume', started.id]);
    await resumed.until(is('resumed'));
    for (const node of wave2.slice(3)) await sims.release(node);
    expect(await resumed.exit, resumed.stderr()).toBe(0);
    const sentBefore = r.events.filter(is('sent')).map((e) => e.node);
    const sentAfter = resumed.events.filter(is('sent')).map((e) => e.node);
    expect(sentBefore.filter((n) => sentAfter.includes(n))).toEqual([]);
    expect([...sentBefore, ...sentAfter].sort()).toEqual([...ordered].sort());
    for (const node of simulated) expect(sims.deliveries(node).filter((d) => (d.resources as Array<{ content: string }>)[0]!.content === 'v = 3\n'), node).toHaveLength(1);
    await untilFile(hosts[fifth]!, 'srv/app.conf', 'v = 3\n');
  }, 180_000);

  it('--abort stops a halted rollout and gives its nodes back: a new rollout for them is taken', async () => {
    sims.behave(ordered[1]!, { fail: { resource: 'file conf', message: 'EROFS: read-only file system' } });
    const r = rolloutProcess(mesh, [file('v4', 'v = 4\n'), '--all', '--waves', '1,2,100%']);
    expect(await r.exit).toBe(1);
    const id = r.events.find(is('started'))!.id;
    expect(r.events.find(is('halted'))).toMatchObject({ node: ordered[1], resource: 'file conf', error: 'EROFS: read-only file system', untouched: 18 });
    const abort = await mesh.meshctl(['rollout', '--abort', id]);
    expect(abort.code, abort.stderr).toBe(0);
    expect(abort.stdout).toMatch(new RegExp(`rollout ${id} aborted: 2 nodes had been sent it \\(1 converged\\), 18 never sent keep what they have`));
    const again = await mesh.meshctl(['rollout', '--resume', id]);
    expect(again.code).toBe(3);
    expect(again.stderr).toMatch(/was aborted: it cannot be resumed/);
    sims.behave(ordered[1]!, 'converge');
    const next = rolloutProcess(mesh, [file('v5', 'v = 5\n'), '--nodes', ordered.slice(0, 3).join(','), '--waves', '100%']);
    expect(await next.exit, next.stderr()).toBe(0);
  }, 180_000);

  it('a real daemon paused with mesh-host pause is waited for, named with its reason and who paused it; it applies nothing until mesh-host resume, then the newest delivery at once, and the rollout goes on to the end', async () => {
    const host = hosts[fifth]!;
    const kept = /delivery kept and enqueued/;
    // Its reports so far (genesis's at least, sent once it connected): none may follow while it is paused.
    let applied = (await reportsOf(control, fifth)).length;
    while (applied === 0) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      applied = (await reportsOf(control, fifth)).length;
    }
    const conf = join(host.root, 'srv/app.conf');
    const had = existsSync(conf) ? readFileSync(conf, 'utf8') : undefined;
    const pause = await runCli('mesh-host', ['pause', '--reason', 'replacing a disk', '--json', ...host.flags, '--log-level', 'warn'], { env: { SUDO_USER: 'alice' } });
    expect(pause.code, pause.stderr).toBe(0);
    await untilLog(host, 'pause heard', /the host is paused/, 1);
    // A delivery before the rollout's, kept while paused: the rollout's is the newest, and only it is applied.
    const before = logCount(host, kept);
    const sent = await mesh.meshctl(['send', file('v6-early', 'v = 6 early\n'), '--nodes', fifth]);
    expect(sent.code, sent.stderr).toBe(0);
    await untilLog(host, 'the early delivery kept', kept, before + 1);

    const r = rolloutProcess(mesh, [file('v6', 'v = 6\n'), '--all', '--waves', '5,100%', '--wait', '3s']);
    const paused = await r.until(is('paused', fifth));
    expect(paused).toMatchObject({ reason: 'replacing a disk', by: 'alice' });
    // The terminal's line for it: who, since when, why, and that it is waited for.
    expect(describeEvent(paused)).toMatch(new RegExp(`^${fifth}  paused by alice since \\S+: replacing a disk; waiting for it \\(a paused node is not a failure\\)$`));
    await untilLog(host, "the rollout's delivery kept", kept, before + 2);
    const copy = await r.until(is('sent', fifth));
    for (const node of ordered.slice(0, 4)) await r.until(is('node', node));
    // Three times --wait after its copy was sent, the paused host is still waited for: not silent, not
    // halted, the next wave not begun, nothing applied on it.
    const since = Date.now();
    while (Date.now() - since < 9000) {
      expect(r.events.filter((e) => (e.event === 'node' && e.node === fifth) || e.event === 'halted' || (e.event === 'wave' && e.wave === 2))).toEqual([]);
      expect(r.child.exitCode).toBe(null);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(existsSync(conf) ? readFileSync(conf, 'utf8') : undefined).toBe(had);
    expect(await reportsOf(control, fifth)).toHaveLength(applied);

    const resume = await runCli('mesh-host', ['resume', '--json', ...host.flags, '--log-level', 'warn']);
    expect(resume.code, resume.stderr).toBe(0);
    expect(JSON.parse(resume.stdout)).toMatchObject({ resumed: true, was: { reason: 'replacing a disk', by: 'alice' } });
    expect(await r.exit, r.stderr()).toBe(0);
    expect(r.events.find(is('unpaused', fifth))).toBeDefined();
    expect(r.events.find(is('node', fifth))).toMatchObject({ phase: 'converged' });
    expect(r.events.filter(is('sent')).map((e) => e.node).sort()).toEqual([...ordered].sort());
    expect(r.events.find(is('done'))).toMatchObject({ nodes: 20, converged: 20 });
    expect(readFileSync(conf, 'utf8')).toBe('v = 6\n');
    // One apply on resume, of the rollout's copy: the early delivery was never applied.
    const after = (await reportsOf(control, fifth)).slice(applied);
    expect(after.map((x) => [x.trigger, x.outcome, x.declaration?.sequence])).toEqual([['delivery', 'converged', copy.mark.sequence]]);
  }, 180_000);
});
