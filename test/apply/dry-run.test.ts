import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Resource } from '../../src/core/declaration/schema.js';
import { declaration, put, testHost, type TestHost } from '../support/host.js';
import { diff, snapshot } from '../support/snapshot.js';

let hosts: TestHost[] = [];
afterEach(() => {
  hosts.forEach((h) => h.cleanup());
  hosts = [];
});

describe('the check writes nothing', () => {
  it('a dry run that would add, take over, change and remove leaves the store in memory, the state directory and the root as they were', async () => {
    const h = testHost();
    hosts.push(h);
    const first: Resource[] = [
      { type: 'directory', id: 'app', path: '/srv/app' },
      { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: 'x=1\n' },
      { type: 'file', id: 'gone', path: '/srv/app/gone.conf', content: 'bye\n' },
    ];
    expect((await h.apply(declaration(first))).kind).toBe('applied');
    // Found on the machine, not the host's: the next declaration takes it over.
    mkdirSync(join(h.root, 'etc/found'), { recursive: true });
    put(h.root, 'etc/found/found.conf', 'found\n');
    const records = JSON.stringify(h.env.store.state.records);
    const head = JSON.stringify({ ...h.env.store.state, records: undefined });
    const dirs = { root: h.root, state: h.stateDir };
    const disk = snapshot(dirs);
    const next: Resource[] = [
      { type: 'directory', id: 'app', path: '/srv/app', mode: '0700' },
      { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: 'x=2\n' },
      { type: 'file', id: 'found', path: '/etc/found/found.conf', content: 'ours\n', take: true },
      { type: 'file', id: 'new', path: '/srv/app/new.conf', content: 'new\n' },
    ];
    const planned = await h.apply(declaration(next, { sequence: 2 }), { dryRun: true });
    expect(planned.kind).toBe('planned');
    if (planned.kind !== 'planned') return;
    // It did plan all four kinds of change…
    const actions = planned.plan.steps.map((s) => `${s.resource}:${s.actions.join(',')}`);
    expect(actions.some((a) => a.startsWith('gone:'))).toBe(true);
    expect(actions.some((a) => a.startsWith('found:take'))).toBe(true);
    expect(actions.some((a) => a.startsWith('new:'))).toBe(true);
    // …and changed nothing: not the records in memory, not the store's head, not a byte, a mode or a time of any path on disk.
    expect(JSON.stringify(h.env.store.state.records)).toBe(records);
    expect(JSON.stringify({ ...h.env.store.state, records: undefined })).toBe(head);
    expect(diff(disk, snapshot(dirs))).toEqual([]);
  });
});
