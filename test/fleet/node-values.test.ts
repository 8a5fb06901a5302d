import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { lookUp, parseNodeValues, renderFor, usesValues } from '../../src/control/fleet/node-values.js';
import { validateDeclaration } from '../../src/core/declaration/validate.js';
import { HostError } from '../../src/core/system/errors.js';
import { projectDir } from '../support/cli.js';

const values = parseNodeValues(
  JSON.stringify({
    all: { port: 80, dns: '10.0.0.53', motd: 'managed' },
    labels: [
      { select: 'role=web,site=ams', values: { port: 8443 } },
      { select: 'role=web', values: { port: 8080, tls: true } },
    ],
    nodes: { 'web-3': { port: 9000 } },
  }),
  'values.json',
);

describe('per-node values, looked up in layers (the node, then label selections in order, then all)', () => {
  it('the most specific layer that holds the key wins, and says where it came from', () => {
    const at = (node: string, labels: Record<string, string>, key: string) => lookUp(values, node, labels, key);
    expect(at('web-3', { role: 'web', site: 'ams' }, 'port')).toEqual({ found: true, value: 9000, from: 'node' });
    expect(at('web-2', { role: 'web', site: 'ams' }, 'port')).toEqual({ found: true, value: 8443, from: 'labels role=web,site=ams' });
    expect(at('web-1', { role: 'web', site: 'fra' }, 'port')).toEqual({ found: true, value: 8080, from: 'labels role=web' });
    expect(at('db-1', { role: 'db' }, 'port')).toEqual({ found: true, value: 80, from: 'all' });
    expect(at('web-1', { role: 'web' }, 'tls')).toEqual({ found: true, value: true, from: 'labels role=web' });
    expect(at('db-1', { role: 'db' }, 'tls')).toEqual({ found: false, looked: ['nodes/db-1', 'all'] });
    expect(at('db-1', { role: 'db' }, 'node.name')).toEqual({ found: true, value: 'db-1', from: 'built in' });
    expect(at('db-1', { role: 'db' }, 'node.labels.role')).toEqual({ found: true, value: 'db', from: 'built in' });
  });

  it('renders $value (any JSON value) and $text (placed in a string) for each node; a missing key is named with its JSON path and where it was looked for', () => {
    const fields = {
      version: 1,
      mode: 'converged',
      resources: [
        { type: 'file', id: 'conf', path: '/srv/app.conf', content: { $text: 'listen {{ port }} on {{node.name}} ({{ node.labels.role }})\n' } },
        { type: 'container', id: 'app', name: 'app', image: { ref: 'app@sha256:' + 'a'.repeat(64) }, state: 'running', env: { DNS: { $value: 'dns' }, TLS: { $value: 'tls', default: 'off' } } },
      ],
    };
    expect(usesValues(fields)).toBe(true);
    const web = renderFor(fields, 'web-3', { role: 'web' }, values);
    expect(web.missing).toEqual([]);
    expect(web.declaration.resources).toEqual([
      { ...fields.resources[0], content: 'listen 9000 on web-3 (web)\n' },
      { ...fields.resources[1], env: { DNS: '10.0.0.53', TLS: true } },
    ]);
    expect(web.used).toEqual([
      { key: 'port', value: 9000, from: 'node', sensitive: false },
      { key: 'node.name', value: 'web-3', from: 'built in', sensitive: false },
      { key: 'node.labels.role', value: 'web', from: 'built in', sensitive: false },
      { key: 'dns', value: '10.0.0.53', from: 'all', sensitive: false },
      { key: 'tls', value: true, from: 'labels role=web', sensitive: false },
    ]);
    // The default stands in for a value the node has not.
    expect((renderFor(fields, 'db-1', { role: 'db' }, values).declaration.resources as Array<{ env?: object }>)[1]!.env).toEqual({ DNS: '10.0.0.53', TLS: 'off' });
    // A node without the label its text names: missing, by key and path.
    expect(renderFor(fields, 'db-1', {}, values).missing).toEqual([{ key: 'node.labels.role', path: '/resources/0/content', looked: ['the labels of db-1'] }]);
  });

  it('a value that lands in a sensitive file or a sensitive env is said to be sensitive (the plan never shows it)', () => {
    const fields = { resources: [{ type: 'file', id: 't', path: '/t', sensitive: true, content: { $value: 'dns' } }, { type: 'container', env: { A: { $value: 'motd' } }, sensitiveEnv: ['A'] }] };
    expect(renderFor(fields, 'web-3', {}, values).used.map((u) => [u.key, u.sensitive])).toEqual([
      ['dns', true],
      ['motd', true],
    ]);
  });

  it('no declaration valid before changes meaning: one without references renders to itself, and a reference object put anywhere in a valid declaration makes it invalid', async () => {
    const example = JSON.parse(readFileSync(join(projectDir, 'fixtures/declarations/example.json'), 'utf8')) as Record<string, unknown>;
    expect((await validateDeclaration(example)).ok).toBe(true);
    expect(usesValues(example)).toBe(false);
    expect(renderFor(example, 'example', {}, values).declaration).toEqual(example);
    // Every place a value sits, and every object as a new key: each with a reference is refused by the schema.
    const places: Array<(d: Record<string, unknown>) => void> = [];
    const visit = (value: unknown, set: (d: Record<string, unknown>, v: unknown) => void, get: (d: Record<string, unknown>) => unknown) => {
      places.push((d) => set(d, { $value: 'x' }), (d) => set(d, { $text: 'x' }));
      if (value && typeof value === 'object') {
        if (!Array.isArray(value)) places.push((d) => Object.assign(get(d) as object, { $value: 'x' }));
        for (const [k, v] of Object.entries(value)) visit(v, (d, x) => ((get(d) as Record<string, unknown>)[k] = x), (d) => (get(d) as Record<string, unknown>)[k]);
      }
    };
    for (const [k, v] of Object.entries(example)) visit(v, (d, x) => (d[k] = x), (d) => d[k]);
    places.push((d) => Object.assign(d, { $value: 'x' }));
    const container = { type: 'container', id: 'c', name: 'c', image: { ref: 'c@sha256:' + 'b'.repeat(64) }, state: 'running', env: { A: 'a' } };
    places.push((d) => (d.resources as object[]).push({ ...container, env: { A: { $value: 'x' } } }));
    expect(places.length).toBeGreaterThan(60);
    // The env map takes any name, `$value` too: there it is an env variable, as it always was, never a reference.
    const env = { ...example, resources: [container, { ...container, id: 'd', name: 'd', env: { $value: 'x', $text: 'y' } }] };
    expect((await validateDeclaration(env)).ok).toBe(true);
    expect(usesValues(env)).toBe(false);
    expect(renderFor(env, 'example', {}, values).declaration).toEqual(env);
    for (const [i, place] of places.entries()) {
      const d = structuredClone(example);
      place(d);
      expect(usesValues(d) || JSON.stringify(d).includes('"$value"'), `place ${i}`).toBe(true);
      expect((await validateDeclaration(d)).ok, `place ${i}: ${JSON.stringify(d)}`).toBe(false);
    }
  });

  it('a values file that is not right is refused whole, each wrong place by its JSON path', () => {
    const wrong = () => parseNodeValues(JSON.stringify({ all: { 'node.name': 1, ok: 1 }, labels: [{ select: 'role==web', values: {} }, { values: {} }], nodes: { a: [] }, extra: 1 }), 'values.json');
    expect(wrong).toThrow(HostError);
    try {
      wrong();
    } catch (err) {
      expect((err as HostError).message).toBe('values.json: the values file is not valid; nothing was sent');
      expect((err as HostError).details).toEqual([
        '/extra: not a part of the values file (all, labels, nodes)',
        '/all/node.name: keys under node. are built in (node.name, node.labels.KEY)',
        expect.stringMatching(/^\/labels\/0\/select: --select role==web: /),
        '/labels/1: { "select": "k=v,…", "values": {…} } is needed',
        '/nodes/a: an object of key: value is needed',
      ]);
    }
  });
});
