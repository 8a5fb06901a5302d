import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, untilFile, type InitHost, type InitMesh } from '../support/mesh-init.js';

const unavailable = natsUnavailable();

describe.skipIf(unavailable !== undefined && !process.env.CI)(`per-node values rendered on the control side before signing, against real daemons${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let mesh: InitMesh;
  let web1: InitHost;
  let web2: InitHost;
  let db1: InitHost;
  const meshctl = async (args: string[], code = 0) => {
    const r = await mesh.meshctl([...args, '--log-level', 'warn']);
    expect(r.code, `meshctl ${args.join(' ')}\n${r.stderr}\n${r.stdout}`).toBe(code);
    return r;
  };
  const file = (name: string, d: object) => {
    const path = join(mesh.dir, '..', `${name}.json`);
    writeFileSync(path, JSON.stringify(d));
    return path;
  };
  const templated = (extra: object[] = []) => ({
    version: 1,
    mode: 'converged',
    resources: [{ type: 'file', id: 'conf', path: '/srv/app.conf', content: { $text: 'listen {{ port }}\nname {{ node.name }}\nsite {{ node.labels.site }}\n' } }, { type: 'file', id: 'key', path: '/srv/key', mode: '0600', sensitive: true, content: { $value: 'api_key' } }, ...extra],
  });

  beforeAll(async () => {
    mesh = await initMesh();
    web1 = await mesh.enrol('web-1', { labels: ['role=web', 'site=ams'] });
    web2 = await mesh.enrol('web-2', { labels: ['role=web', 'site=fra'] });
    db1 = await mesh.enrol('db-1', { labels: ['role=db', 'site=ams'] });
    // The operator's values, kept in the mesh directory: for all, by labels, by node.
    writeFileSync(join(mesh.dir, 'values.json'), JSON.stringify({ all: { api_key: 's3cret-all' }, labels: [{ select: 'role=web', values: { port: 8080 } }], nodes: { 'web-2': { port: 9090, api_key: 's3cret-web-2' } } }));
  }, 180_000);
  afterAll(async () => {
    await mesh?.close();
  });

  it('plan --diff shows each node its own rendered file and the values it used (a sensitive one never), and refuses the node that lacks one, naming it and the key', async () => {
    const plan = await meshctl(['plan', file('t1', templated()), '--all', '--diff'], 6);
    expect(plan.stdout).toMatch(/^plan for 3 nodes: 2 would change, 0 would not, 0 would refuse, 0 did not answer, 1 could not be sent$/m);
    expect(plan.stdout).toMatch(/^\+listen 8080\n\+name web-1\n\+site ams$/m);
    expect(plan.stdout).toMatch(/^\+listen 9090\n\+name web-2\n\+site fra$/m);
    expect(plan.stdout).toContain('  db-1 has no value for port (at /resources/0/content; looked in nodes/db-1, all): nothing was sent to db-1');
    expect(plan.stdout).toContain('  web-1: port=8080 (labels role=web), node.name="web-1" (built in), node.labels.site="ams" (built in), api_key=(sensitive: not shown) (all)');
    expect(plan.stdout).toContain('  web-2: port=9090 (node), node.name="web-2" (built in), node.labels.site="fra" (built in), api_key=(sensitive: not shown) (node)');
    expect(plan.stdout).not.toMatch(/s3cret/);
  }, 60_000);

  it('send --all: each node gets its own rendered, signed copy; the node lacking a value is refused by name and key and is sent nothing; the others converge', async () => {
    const sent = await meshctl(['send', file('t1', templated()), '--all'], 1);
    expect(sent.stdout).toMatch(/^db-1 +refused +db-1 has no value for port \(at \/resources\/0\/content; looked in nodes\/db-1, all\): nothing was sent to db-1$/m);
    expect(sent.stdout).toMatch(/^3 nodes: 2 sent, 0 skipped \(unchanged\), 1 refused$/m);
    await untilFile(web1, 'srv/app.conf', 'listen 8080\nname web-1\nsite ams\n');
    await untilFile(web2, 'srv/app.conf', 'listen 9090\nname web-2\nsite fra\n');
    expect(readFileSync(join(web1.root, 'srv/key'), 'utf8')).toBe('s3cret-all');
    expect(readFileSync(join(web2.root, 'srv/key'), 'utf8')).toBe('s3cret-web-2');
    expect(existsSync(join(db1.root, 'srv/app.conf'))).toBe(false);
    // What was signed is the rendered declaration: the history shows it, the sensitive value hidden.
    const shown = await meshctl(['show', 'web-2', '--json']);
    const d = (JSON.parse(shown.stdout) as { declaration: { resources: Array<{ content: string }> } }).declaration;
    expect(d.resources.map((r) => r.content)).toEqual(['listen 9090\nname web-2\nsite fra\n', '(sensitive: not shown)']);
  }, 60_000);

  it('send NODE FILE and rollout render the same way; a default stands in for a value the node lacks', async () => {
    const one = { ...templated([{ type: 'file', id: 'extra', path: '/srv/extra', content: { $text: 'db port {{ db_port }}\n' } }]), node: 'db-1' };
    const refused = await meshctl(['send', 'db-1', file('one', one)], 3);
    expect(refused.stderr).toMatch(/db-1 has no value for port .* and db_port \(at \/resources\/2\/content; looked in nodes\/db-1, all\): nothing was sent to db-1/);
    const withDefault = { ...one, resources: [{ type: 'file', id: 'conf', path: '/srv/app.conf', content: { $value: 'port', default: 'listen 5432\n' } }] };
    await meshctl(['send', 'db-1', file('one-default', withDefault)]);
    await untilFile(db1, 'srv/app.conf', 'listen 5432\n');

    const r = await meshctl(['rollout', file('t2', { version: 1, mode: 'converged', resources: [{ type: 'file', id: 'conf', path: '/srv/app.conf', content: { $text: 'v2 {{ port }}\n' } }] }), '--select', 'role=web', '--waves', '100%', '--wait', '30s']);
    expect(r.stdout).toMatch(/done/);
    await untilFile(web1, 'srv/app.conf', 'v2 8080\n');
    await untilFile(web2, 'srv/app.conf', 'v2 9090\n');
  }, 90_000);
});
