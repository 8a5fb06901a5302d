import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Resource } from '../../src/core/declaration/schema.js';
import { openStore } from '../../src/engine/apply/open-store.js';
import { silentLogger } from '../../src/core/system/log.js';
import { declaration, reportOf, testHost, type TestHost } from '../support/host.js';
import { diff, snapshot } from '../support/snapshot.js';

let host: TestHost;
afterEach(() => host?.cleanup());

const file = (id: string, path: string, content: string): Resource => ({ type: 'file', id, path, content });

describe('the write path', () => {
  it('a dry run writes nothing, not even to the store in memory', async () => {
    host = testHost();
    const d = declaration([file('a', '/etc/a', 'x\n')]);
    reportOf(await host.apply(d));
    // Touched, content the same: the check reads it whole and would refresh what it saw.
    utimesSync(join(host.root, 'etc/a'), new Date(2000, 1, 1), new Date(2000, 1, 1));
    const before = structuredClone(host.env.store.state.records);
    const planned = await host.apply(d, { dryRun: true });
    expect(planned.kind).toBe('planned');
    expect(host.env.store.state.records).toEqual(before);
    // The apply remembers what the check saw.
    reportOf(await host.apply(d, {}));
    expect(host.env.store.state.records.a!.seen!.mtimeMs).toBe(new Date(2000, 1, 1).getTime());
  });

  it('a quiet reconcile (no change, no report) writes nothing: every path of the root and the state directory keeps its stat and bytes', async () => {
    host = testHost();
    const d = declaration([{ type: 'directory', id: 'd', path: '/srv/d' }, file('a', '/srv/d/a', 'x\n'), { type: 'directory', id: 'e', path: '/etc/app', mode: '0750' }, file('b', '/etc/app/b', 'y\n')]);
    reportOf(await host.apply(d));
    const dirs = { root: host.root, state: host.stateDir };
    const before = snapshot(dirs);
    const quiet = await host.apply(d, { trigger: 'reconcile' });
    expect(quiet.kind).toBe('silent');
    expect(diff(before, snapshot(dirs))).toEqual([]);
  });

  it('a batch leaves no temporary file and no intent behind', async () => {
    host = testHost();
    const resources: Resource[] = [{ type: 'directory', id: 'd', path: '/srv/d' }];
    for (let i = 0; i < 50; i++) resources.push(file(`f${i}`, `/srv/d/f${i}`, `${i}\n`));
    expect(reportOf(await host.apply(declaration(resources))).outcome).toBe('converged');
    expect(readdirSync(join(host.root, 'srv/d')).sort()).toEqual(resources.slice(1).map((r) => (r as { path: string }).path.slice(7)).sort());
    expect(host.env.store.pendingIntents).toEqual([]);
    host.reopen();
    expect(host.env.store.pendingIntents).toEqual([]);
  });

  it('at start, undoes what an apply cut short made and never recorded, and removes its temporary files', async () => {
    host = testHost();
    reportOf(await host.apply(declaration([file('kept', '/etc/kept', 'k')])));
    // As a crash leaves it: the intent durable, the things made, the save never done.
    await host.env.store.intend({
      root: host.root,
      entries: [
        { path: '/srv/new', creates: true, directory: true },
        { path: '/srv/new/a', temporary: '.a.mesh-host-x-0', creates: true },
        { path: '/srv/new/b', temporary: '.b.mesh-host-x-1', creates: true },
        { path: '/etc/kept', temporary: '.kept.mesh-host-x-2' },
      ],
    });
    mkdirSync(join(host.root, 'srv/new'));
    writeFileSync(join(host.root, 'srv/new/a'), 'made');
    writeFileSync(join(host.root, 'srv/new/.b.mesh-host-x-1'), 'half');
    writeFileSync(join(host.root, 'etc/.kept.mesh-host-x-2'), 'half');
    const lines: string[] = [];
    const log = silentLogger();
    log.warn = ((obj: unknown, msg: string) => void lines.push(msg)) as typeof log.warn;
    const store = await openStore(host.stateDir, log);
    expect(existsSync(join(host.root, 'srv/new'))).toBe(false);
    expect(readdirSync(join(host.root, 'etc'))).toEqual(['kept']);
    expect(lines.join('\n')).toMatch(/removed 2 temporary files from target directories, undid 2 paths it made that the store never recorded/);
    expect(store.pendingIntents).toEqual([]);
    // Settled: the next start finds nothing to do.
    expect((await openStore(host.stateDir, silentLogger())).pendingIntents).toEqual([]);
  });
});
