import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { journalPath, readJournal, type Journal } from '../../src/kinds/archive/journal.js';
import type { ArchiveObjects } from '../../src/kinds/archive/objects.js';
import type { Resource } from '../../src/core/declaration/schema.js';
import { validateDeclaration } from '../../src/core/declaration/validate.js';
import { declaration, reportOf, testHost, type TestHost } from '../support/host.js';
import { hashTree } from '../support/tree.js';
import { gnuTar, inlineArchive, memoryObjects, sha256Of } from '../support/archives.js';
import { FakeSystemd, fakeClock } from '../support/fake-systemd.js';

const work = mkdtempSync(join(tmpdir(), 'mesh-host-archives-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let host: TestHost;
afterEach(() => host?.cleanup());

let made = 0;
/** A tar.gz made by GNU tar from files given as name → content (a trailing '/' makes a directory). */
function archive(files: Record<string, string | { content: string; mode: number }>, tarFlags: string[] = []): string {
  const dir = join(work, `src-${++made}`);
  mkdirSync(dir);
  for (const [name, value] of Object.entries(files)) {
    if (name.endsWith('/')) {
      mkdirSync(join(dir, name), { recursive: true });
      continue;
    }
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    const { content, mode } = typeof value === 'string' ? { content: value, mode: 0o644 } : value;
    writeFileSync(join(dir, name), content);
    chmodSync(join(dir, name), mode);
  }
  const out = join(work, `a-${made}.tgz`);
  gnuTar(['czf', out, ...tarFlags, '-C', dir, '.']);
  return out;
}

/** An archive store in memory that counts reads: a kept archive and a dry run read nothing. */
function countingStore(objects: Map<string, Buffer>): { objects: ArchiveObjects; reads: () => number } {
  const inner = memoryObjects(objects);
  let reads = 0;
  return {
    objects: { info: inner.info, read: async (name) => (reads++, inner.read(name)) },
    reads: () => reads,
  };
}

const objectArchive = (id: string, path: string, file: string, name: string, extra: object = {}): Resource => ({ type: 'archive', id, path, sha256: sha256Of(file), source: { object: name }, ...extra });
const journalOf = (h: TestHost, target: string): Journal => readJournal(h.stateDir, target)!;
const listed = (j: Journal) => j.entries.map((e) => `${e.type} ${e.name} ${e.mode.toString(8)}`);

describe('an archive converges', () => {
  it('unpacks a release: an executable 0755, owners never from the archive, modes masked to 0777, into a declared releases folder', async () => {
    host = testHost({ kinds: {}, dirs: ['var/lib'] });
    const file = archive({ 'bin/mesh-host': { content: '#!/bin/sh\necho host\n', mode: 0o755 }, 'share/notes.txt': { content: 'notes\n', mode: 0o640 } }, ['--owner=1234', '--group=4321']);
    const report = reportOf(await host.apply(declaration([
      { type: 'directory', id: 'state', path: '/var/lib/mesh-host' },
      { type: 'directory', id: 'releases', path: '/var/lib/mesh-host/releases' },
      inlineArchive('release', '/var/lib/mesh-host/releases/1.2.3', file),
    ])));
    expect(report.outcome, JSON.stringify(report.steps)).toBe('converged');
    const release = join(host.root, 'var/lib/mesh-host/releases/1.2.3');
    const bin = statSync(join(release, 'bin/mesh-host'));
    expect([bin.mode & 0o7777, bin.uid, bin.gid]).toEqual([0o755, 0, 0]);
    expect(statSync(join(release, 'share/notes.txt')).mode & 0o7777).toBe(0o640);
    expect(readFileSync(join(release, 'bin/mesh-host'), 'utf8')).toBe('#!/bin/sh\necho host\n');
    const journal = journalOf(host, '/var/lib/mesh-host/releases/1.2.3');
    expect(journal).toMatchObject({ target: '/var/lib/mesh-host/releases/1.2.3', sha256: sha256Of(file), complete: true, created: true });
    expect(listed(journal).sort()).toEqual(['dir bin 755', 'dir share 755', 'file bin/mesh-host 755', 'file share/notes.txt 640']);
    expect(statSync(journalPath(host.stateDir, '/var/lib/mesh-host/releases/1.2.3')).mode & 0o777).toBe(0o600);

    // The no-op: nothing to do, nothing written.
    const before = hashTree(host.root);
    const again = reportOf(await host.apply(declaration([
      { type: 'directory', id: 'state', path: '/var/lib/mesh-host' },
      { type: 'directory', id: 'releases', path: '/var/lib/mesh-host/releases' },
      inlineArchive('release', '/var/lib/mesh-host/releases/1.2.3', file),
    ])));
    expect(again.steps.map((s) => s.status)).toEqual(['unchanged', 'unchanged', 'unchanged']);
    expect(hashTree(host.root)).toEqual(before);
  });

  it("gives files the resource's owner and group", async () => {
    host = testHost({ kinds: {}, dirs: ['opt'] });
    const file = archive({ 'a/b': 'b' });
    const report = reportOf(await host.apply(declaration([inlineArchive('app', '/opt/app', file, { owner: '65534', group: '65534' })])));
    expect(report.outcome).toBe('converged');
    for (const path of ['opt/app', 'opt/app/a', 'opt/app/a/b']) expect([statSync(join(host.root, path)).uid, statSync(join(host.root, path)).gid]).toEqual([65534, 65534]);
  });

  it('a new archive replaces the old contents: entries it lacks are removed, the rest written, the journal names the new set', async () => {
    host = testHost({ kinds: {}, dirs: ['opt'] });
    const v1 = archive({ 'keep.txt': 'same', 'change.txt': 'one', 'gone/deep/x': 'x', 'gone.txt': 'bye' });
    const v2 = archive({ 'keep.txt': 'same', 'change.txt': 'two', 'new/y': 'y' });
    const store = countingStore(new Map([['app-1.tgz', readFileSync(v1)], ['app-2.tgz', readFileSync(v2)]]));
    host.kinds({ archiveObjects: () => async () => store.objects });
    expect(reportOf(await host.apply(declaration([objectArchive('app', '/opt/app', v1, 'app-1.tgz')]))).outcome).toBe('converged');
    const keptIno = lstatSync(join(host.root, 'opt/app/keep.txt')).ino;
    // Someone else's file inside the target is never touched.
    writeFileSync(join(host.root, 'opt/app/gone/theirs'), 'theirs');

    const report = reportOf(await host.apply(declaration([objectArchive('app', '/opt/app', v2, 'app-2.tgz')])));
    expect(report.outcome, JSON.stringify(report.steps)).toBe('converged');
    expect(report.steps[0]!.actions[0]).toMatch(/^replace [0-9a-f]{12}→[0-9a-f]{12}$/);
    const tree = Object.keys(hashTree(join(host.root, 'opt/app'))).sort();
    expect(tree).toEqual(['.', 'change.txt', 'gone', 'gone/theirs', 'keep.txt', 'new', 'new/y']);
    expect(readFileSync(join(host.root, 'opt/app/change.txt'), 'utf8')).toBe('two');
    expect(lstatSync(join(host.root, 'opt/app/keep.txt')).ino).toBe(keptIno); // already as the new archive has it: not written again
    expect(report.steps[0]!.detail).toContain('holds what others put there');
    const journal = journalOf(host, '/opt/app');
    expect(journal.sha256).toBe(sha256Of(v2));
    expect(listed(journal).sort()).toEqual(['dir new 755', 'file change.txt 644', 'file keep.txt 644', 'file new/y 644']);
  });

  it('restores drift from the kept archive without fetching again, and says what drifted', async () => {
    host = testHost({ kinds: {}, dirs: ['opt'] });
    const file = archive({ 'bin/tool': { content: 'tool', mode: 0o755 }, 'etc/conf': 'conf', 'etc/other': 'other' });
    const objects = new Map([['tool.tgz', readFileSync(file)]]);
    const store = countingStore(objects);
    host.kinds({ archiveObjects: () => async () => store.objects });
    const decl = declaration([objectArchive('tool', '/opt/tool', file, 'tool.tgz')]);
    expect(reportOf(await host.apply(decl)).outcome).toBe('converged');
    expect(store.reads()).toBe(1);
    const unpacked = hashTree(join(host.root, 'opt/tool'));

    objects.clear(); // the store no longer has it: the kept copy must serve
    writeFileSync(join(host.root, 'opt/tool/etc/conf'), 'changed by hand');
    unlinkSync(join(host.root, 'opt/tool/etc/other'));
    chmodSync(join(host.root, 'opt/tool/bin/tool'), 0o777);
    unlinkSync(join(host.root, 'opt/tool/bin/tool'));
    symlinkSync('/etc/passwd', join(host.root, 'opt/tool/bin/tool')); // a link planted at a file of ours: replaced, never followed
    const report = reportOf(await host.apply(decl));
    expect(report.outcome, JSON.stringify(report.steps)).toBe('converged');
    const said = report.steps[0]!.actions.join(' ');
    expect(said).toMatch(/^restore 3 entries: /);
    for (const part of ['bin/tool (a symbolic link (to /etc/passwd) stands there; replaced)', 'etc/conf (content)', 'etc/other (missing)']) expect(said).toContain(part);
    expect(store.reads()).toBe(1);
    const restored = hashTree(join(host.root, 'opt/tool'));
    expect(Object.fromEntries(Object.entries(restored).map(([k, v]) => [k, v.replace(/ ino=\d+/, '')]))).toEqual(Object.fromEntries(Object.entries(unpacked).map(([k, v]) => [k, v.replace(/ ino=\d+/, '')])));
  });

  it('a dry run fetches nothing and touches nothing; the plan says it would fetch', async () => {
    host = testHost({ kinds: {}, dirs: ['opt'] });
    const file = archive({ x: 'x' });
    const store = countingStore(new Map([['x.tgz', readFileSync(file)]]));
    host.kinds({ archiveObjects: () => async () => store.objects });
    const before = { root: hashTree(host.root), state: existsSync(host.stateDir) ? readdirSync(host.stateDir).sort() : [] };
    const result = await host.apply(declaration([objectArchive('x', '/opt/x', file, 'x.tgz')]), { dryRun: true });
    expect(result.kind).toBe('planned');
    expect(result.kind === 'planned' && result.plan.steps[0]!.actions).toEqual(['create', "fetch object 'x.tgz'", `unpack ${sha256Of(file).slice(0, 12)}`]);
    expect(store.reads()).toBe(0);
    expect(hashTree(host.root)).toEqual(before.root);
    expect(readdirSync(host.stateDir).sort()).toEqual(before.state);
  });

  it('an object source with no link refuses the apply, saying there is no link; nothing is touched', async () => {
    host = testHost({ kinds: {}, dirs: ['opt'] });
    const file = archive({ x: 'x' });
    const result = await host.apply(declaration([{ type: 'directory', id: 'd', path: '/opt/d' }, objectArchive('x', '/opt/x', file, 'x.tgz')]));
    expect(result.kind).toBe('refused');
    expect(result.kind === 'refused' && result.details).toEqual(["x (/opt/x): object 'x.tgz' must be fetched from the archive store, and this host has no link (no servers are configured)"]);
    expect(readdirSync(join(host.root, 'opt'))).toEqual([]);
  });

  it('a missing object fails the resource, naming it', async () => {
    host = testHost({ kinds: {}, dirs: ['opt'] });
    const file = archive({ x: 'x' });
    host.kinds({ archiveObjects: () => async () => memoryObjects(new Map()) });
    const report = reportOf(await host.apply(declaration([objectArchive('x', '/opt/x', file, 'x.tgz')])));
    expect(report.error?.message).toBe("object 'x.tgz' is not in the archive store");
  });

  it('removal takes off exactly the journal\'s entries, then the target, then the journal; the kept archive goes', async () => {
    host = testHost({ kinds: {}, dirs: ['opt'] });
    const file = archive({ 'a/b/c': 'c', d: 'd' });
    host.kinds({ archiveObjects: () => async () => memoryObjects(new Map([['r.tgz', readFileSync(file)]])) });
    expect(reportOf(await host.apply(declaration([objectArchive('r', '/opt/r', file, 'r.tgz')]))).outcome).toBe('converged');
    expect(readdirSync(join(host.stateDir, 'archives'))).toEqual([sha256Of(file)]);
    const report = reportOf(await host.apply(declaration([])));
    expect(report.outcome, JSON.stringify(report.steps)).toBe('converged');
    expect(existsSync(join(host.root, 'opt/r'))).toBe(false);
    expect(existsSync(journalPath(host.stateDir, '/opt/r'))).toBe(false);
    expect(existsSync(join(host.stateDir, 'archives'))).toBe(false);
    expect(host.env.store.state.records).toEqual({});
  });
});

describe('found things at the target', () => {
  it('an adopted machine holds a target with things the host did not unpack', async () => {
    host = testHost({ kinds: {}, dirs: ['opt/app'] });
    writeFileSync(join(host.root, 'opt/app/theirs'), 'theirs');
    const before = hashTree(host.root);
    const report = reportOf(await host.apply(declaration([inlineArchive('app', '/opt/app', archive({ ours: 'ours' }))], { mode: 'adopted' })));
    expect(report.steps[0]!.status).toBe('held');
    expect(report.facts.held).toEqual([{ id: 'app', target: '/opt/app', reason: expect.stringContaining('not created by the host') }]);
    expect(hashTree(host.root)).toEqual(before);
    expect(existsSync(journalPath(host.stateDir, '/opt/app'))).toBe(false);
  });

  it('take unpacks over it keeping the originals it overwrites; removal gives them back and leaves what was theirs', async () => {
    host = testHost({ kinds: {}, dirs: ['opt/app/etc'] });
    writeFileSync(join(host.root, 'opt/app/theirs'), 'theirs');
    writeFileSync(join(host.root, 'opt/app/etc/conf'), 'their conf', { mode: 0o600 });
    const before = hashTree(host.root);
    const file = archive({ 'etc/conf': 'our conf', 'bin/x': 'x' });
    const report = reportOf(await host.apply(declaration([inlineArchive('app', '/opt/app', file, { take: true })], { mode: 'adopted' })));
    expect(report.outcome, JSON.stringify(report.steps)).toBe('converged');
    expect(report.steps[0]!.actions[0]).toMatch(/^unpack/);
    expect(readFileSync(join(host.root, 'opt/app/etc/conf'), 'utf8')).toBe('our conf');
    const removal = reportOf(await host.apply(declaration([], { mode: 'adopted' })));
    expect(removal.outcome, JSON.stringify(removal.steps)).toBe('converged');
    const after = hashTree(host.root);
    for (const tree of [before, after]) delete tree['opt/app/etc/conf'];
    expect(after).toEqual(before);
    expect(readFileSync(join(host.root, 'opt/app/etc/conf'), 'utf8')).toBe('their conf');
    expect(statSync(join(host.root, 'opt/app/etc/conf')).mode & 0o777).toBe(0o600);
  });
});

describe('forged journals are refused whole, nothing removed', () => {
  const forgeries: Array<[string, (j: Journal) => unknown]> = [
    ["an entry with '..'", (j) => ({ ...j, entries: [...j.entries, { name: '../../outside/secret', type: 'file', mode: 0o644, sha256: 'a'.repeat(64) }] })],
    ['an absolute entry', (j) => ({ ...j, entries: [...j.entries, { name: '/etc/passwd', type: 'file', mode: 0o644, sha256: 'a'.repeat(64) }] })],
    ['an entry whose parent is not under the target', (j) => ({ ...j, entries: [...j.entries, { name: 'nowhere/secret', type: 'file', mode: 0o644, sha256: 'a'.repeat(64) }] })],
    ['a journal naming another target', (j) => ({ ...j, target: '/etc' })],
  ];
  it.each(forgeries)('%s', async (_name, forge) => {
    host = testHost({ kinds: {}, dirs: ['opt', 'etc'] });
    const outside = join(dirname(host.root), 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'secret'), 'kept');
    writeFileSync(join(host.root, 'etc/passwd'), 'root:x:0:0');
    const file = archive({ 'bin/x': 'x', y: 'y' });
    expect(reportOf(await host.apply(declaration([inlineArchive('app', '/opt/app', file)]))).outcome).toBe('converged');
    const path = journalPath(host.stateDir, '/opt/app');
    writeFileSync(path, JSON.stringify(forge(journalOf(host, '/opt/app'))), { mode: 0o600 });
    const before = { root: hashTree(host.root), outside: hashTree(outside), journal: readFileSync(path, 'utf8') };

    const result = await host.apply(declaration([]));
    expect(result.kind).toBe('refused');
    expect(result.kind === 'refused' && result.details.join('\n')).toMatch(/the journal .* is refused whole: .*nothing it names was touched/);
    expect(hashTree(host.root)).toEqual(before.root);
    expect(hashTree(outside)).toEqual(before.outside);
    expect(readFileSync(path, 'utf8')).toBe(before.journal);
  });

  it('a journal another account could write is refused whole', async () => {
    host = testHost({ kinds: {}, dirs: ['opt'] });
    expect(reportOf(await host.apply(declaration([inlineArchive('app', '/opt/app', archive({ y: 'y' }))]))).outcome).toBe('converged');
    chmodSync(journalPath(host.stateDir, '/opt/app'), 0o666);
    const result = await host.apply(declaration([]));
    expect(result.kind === 'refused' && result.details.join('\n')).toMatch(/its mode is 666, not 0600/);
    expect(existsSync(join(host.root, 'opt/app/y'))).toBe(true);
  });
});

describe('the declaration', () => {
  const base = { version: 1, node: 'n', mode: 'converged', sequence: 1 };
  it('restartOn may name an archive; a new archive restarts its service', async () => {
    const clock = fakeClock();
    const systemd = new FakeSystemd(clock);
    systemd.define('app.service', { kind: 'stays' }, { running: true });
    host = testHost({ kinds: { clock, serviceManager: async () => ({ manager: systemd, reason: 'fake' }) }, dirs: ['opt'] });
    host.env.clock = clock;
    const svc: Resource = { type: 'service', id: 'app-svc', unit: 'app.service', state: 'running', restartOn: ['app'] };
    expect(reportOf(await host.apply(declaration([inlineArchive('app', '/opt/app', archive({ v: '1' })), svc]))).outcome).toBe('converged');
    systemd.calls.length = 0;
    expect(reportOf(await host.apply(declaration([inlineArchive('app', '/opt/app', archive({ v: '1' })), svc]))).steps[1]!.status).toBe('unchanged');
    expect(systemd.actions()).toEqual([]);
    const report = reportOf(await host.apply(declaration([inlineArchive('app', '/opt/app', archive({ v: '2' })), svc])));
    expect(report.steps[1]!.actions).toEqual(['restart (app changed)']);
    expect(systemd.actions()).toContain('restart app.service');
  });

  it('an inline archive over 256 KiB is refused, naming the limit', async () => {
    const result = await validateDeclaration({ ...base, resources: [{ type: 'archive', id: 'a', path: '/opt/a', sha256: 'a'.repeat(64), source: { inline: 'A'.repeat(256 * 1024 + 4) } }] });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.problems.map((p) => `${p.path} ${p.message}`).join('\n')).toMatch(/\/resources\/0\/source.*262144/);
  });

  it('a source is inline or an object, nothing else', async () => {
    const result = await validateDeclaration({ ...base, resources: [{ type: 'archive', id: 'a', path: '/opt/a', sha256: 'a'.repeat(64), source: { url: 'http://x' } }] });
    expect(result.ok).toBe(false);
  });
});
