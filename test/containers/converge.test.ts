import { ensureSealingKey } from '../../src/engine/report/sealing-key.js';
import { CurveSender } from '../../src/core/declaration/sealed.js';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { LABEL } from '../../src/kinds/container/engine-request.js';
import { HostError } from '../../src/core/system/errors.js';
import { container, skip, unavailable, useContainerScene } from './scene.js';

/** The text of every file under a folder (the store's head, journal, outbox…). */
const everyFile = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => readFileSync(join(e.parentPath, e.name), 'utf8'));

describe.skipIf(skip)(`containers converged through podman's API${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const scene = useContainerScene();
  let ref: string;
  beforeAll(async () => {
    ref = await scene.podman.pushImage('web');
  });

  it('an absent container is pulled by digest, created with its labels and started; the same declaration again is a no-op of one listing', async () => {
    const first = await scene.report([container({ ref })]);
    expect(first.outcome, JSON.stringify(first)).toBe('converged');
    expect(first.steps[0]!.actions).toEqual([`pull ${ref}`, 'create', 'start']);
    expect(await scene.inspect('web', '{{.State.Status}}')).toBe('running');
    const labels = JSON.parse(await scene.inspect('web', '{{json .Config.Labels}}')) as Record<string, string>;
    expect(labels[LABEL.node]).toBe('test-node');
    expect(labels[LABEL.resource]).toBe('web');
    expect(labels[LABEL.spec]).toMatch(/^[0-9a-f]{64}$/);
    expect(scene.host.env.store.state.records.web).toMatchObject({ type: 'container', target: 'web', created: true, container: { spec: labels[LABEL.spec] } });

    scene.engine.listings = 0;
    const again = await scene.report([container({ ref })]);
    expect(again.outcome).toBe('converged');
    expect(again.steps[0]!.status).toBe('unchanged');
    expect(scene.engine.listings).toBe(1);
  });

  it('a declared port and volume are the container\'s: the server answers on the published port with the volume\'s file', async () => {
    const data = join(scene.podman.scratch, 'site');
    await scene.podman.container.exec('sh', ['-c', `mkdir -p ${data} && echo served-from-volume > ${data}/index.html`]);
    const report = await scene.report([container({ ref }, { command: ['httpd', '-f', '-p', '8080', '-h', '/www'], ports: ['127.0.0.1:18080:8080'], volumes: [`${data}:/www:ro`] })]);
    expect(report.outcome, JSON.stringify(report)).toBe('converged');
    const got = await scene.podman.container.exec('wget', ['-qO-', 'http://127.0.0.1:18080/index.html']);
    expect(got.stdout.trim()).toBe('served-from-volume');
  });

  it('another spec replaces the container, the step naming the fields that differ', async () => {
    await scene.report([container({ ref }, { env: { MODE: 'one' } })]);
    const before = await scene.inspect('web', '{{.Id}}');
    const report = await scene.report([container({ ref }, { env: { MODE: 'two' }, restart: 'on-failure' })]);
    expect(report.outcome, JSON.stringify(report)).toBe('converged');
    expect(report.steps[0]!.actions).toEqual(['replace (env, restart differ)', 'start']);
    const after = await scene.inspect('web', '{{.Id}}');
    expect(after).not.toBe(before);
    expect(await scene.inspect('web', '{{range .Config.Env}}{{println .}}{{end}}')).toContain('MODE=two');
    expect((await scene.podman.podman(['ps', '-a', '-q'])).stdout.trim().split('\n')).toHaveLength(1);
  });

  it('a running container declared stopped is stopped', async () => {
    await scene.report([container({ ref })]);
    const report = await scene.report([container({ ref }, { state: 'stopped' })]);
    expect(report.steps[0]!.actions).toEqual(['stop']);
    expect(await scene.inspect('web', '{{.State.Status}}')).toBe('exited');
  });

  it('a container removed by hand is made again; one no longer declared is removed', async () => {
    await scene.report([container({ ref })]);
    await scene.podman.podman(['rm', '-f', '-t', '0', 'web']);
    const again = await scene.report([container({ ref })]);
    expect(again.steps[0]!.actions).toEqual(['create', 'start']);
    expect(await scene.inspect('web', '{{.State.Status}}')).toBe('running');
    const gone = await scene.report([]);
    expect(gone.steps.map((s) => [s.resource, s.actions])).toEqual([['web', ['stop', 'remove']]]);
    expect((await scene.podman.podman(['ps', '-a', '-q'])).stdout.trim()).toBe('');
    expect(scene.host.env.store.state.records.web).toBeUndefined();
  });

  it('a file named in restartOn that changes restarts the container', async () => {
    const conf = (content: string) => ({ type: 'file' as const, id: 'web-conf', path: '/etc/web.conf', content });
    await scene.report([conf('a'), container({ ref }, { restartOn: ['web-conf'] })]);
    const started = await scene.inspect('web', '{{.State.StartedAt}}');
    const report = await scene.report([conf('b'), container({ ref }, { restartOn: ['web-conf'] })]);
    expect(report.outcome, JSON.stringify(report)).toBe('converged');
    expect(report.steps[1]!.actions).toEqual(['restart (web-conf changed)']);
    expect(await scene.inspect('web', '{{.State.StartedAt}}')).not.toBe(started);
  });

  it('a sensitive variable reaches the container, and never the plan, the report, the log lines or the store', async () => {
    const secret = 'hunter2-s3cr3t-value';
    const env = { MODE: 'prod', TOKEN: secret };
    const report = await scene.report([container({ ref }, { command: ['sh', '-c', 'echo token is $TOKEN; sleep 0.2; exit 3'], env, sensitiveEnv: ['TOKEN'] })]);
    expect(await scene.inspect('web', '{{range .Config.Env}}{{println .}}{{end}}')).toContain(`TOKEN=${secret}`);
    // It failed (it exits), quoting its log: the value is taken out of the quoted lines.
    expect(report.outcome).toBe('failed');
    expect(report.error?.message).toContain('token is (sensitive)');
    const replaced = await scene.report([container({ ref }, { env: { ...env, TOKEN: 'another' }, sensitiveEnv: ['TOKEN'] })]);
    expect(replaced.steps[0]!.actions).toEqual(['replace (command, env differ)', 'start']);
    for (const text of [JSON.stringify(report), JSON.stringify(replaced), ...everyFile(scene.host.stateDir)]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain('another');
    }
  });

  it('a sealed variable is opened for the container alone: a new box of the same value replaces nothing; the labels and the store hold no hint of it', async () => {
    const secret = `sealed-${Date.now()}-value`;
    const to = ensureSealingKey(scene.host.stateDir).publicKey;
    const sender = new CurveSender('SOATESTSEEDFORCONTAINERS');
    const declared = () => container({ ref }, { env: { MODE: 'prod', TOKEN: sender.seal(Buffer.from(secret), to)! }, sensitiveEnv: ['TOKEN'] });
    const first = await scene.report([declared()]);
    expect(first.outcome).toBe('converged');
    expect(await scene.inspect('web', '{{range .Config.Env}}{{println .}}{{end}}')).toContain(`TOKEN=${secret}`);
    const again = await scene.report([declared()]);
    expect(again.steps.filter((s) => s.verb !== 'none')).toEqual([]);
    const labels = await scene.inspect('web', '{{json .Config.Labels}}');
    for (const text of [labels, JSON.stringify(first), JSON.stringify(again), ...everyFile(scene.host.stateDir)]) expect(text).not.toContain(secret);
  });

  it('a declaration with one image named by a tag is refused whole: not even its good container is made', async () => {
    const refusal = await scene.apply([container({ ref }), container({ ref: '127.0.0.1:5000/busybox-web:latest' }, { id: 'bad', name: 'bad' })]).catch((err: HostError) => err);
    expect(refusal).toBeInstanceOf(HostError);
    expect((refusal as HostError).details).toEqual([expect.stringMatching(/^\/resources\/1\/image\/ref: .*a tag is not a version/)]);
    expect((await scene.podman.podman(['ps', '-a', '-q'])).stdout.trim()).toBe('');
  });

  it('a volume inside the state directory refuses the whole apply, touching nothing', async () => {
    const result = await scene.apply([container({ ref }, { volumes: [`${scene.host.stateDir}/x:/x`] })]);
    expect(result.kind).toBe('refused');
    expect(JSON.stringify(result)).toContain(`volume '${scene.host.stateDir}/x' lies inside the state directory`);
    expect((await scene.podman.podman(['ps', '-a', '-q'])).stdout.trim()).toBe('');
  });
});
