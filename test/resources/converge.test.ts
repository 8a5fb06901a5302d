import { afterEach, describe, expect, it } from 'vitest';
import { chmodSync, chownSync, existsSync, linkSync, lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FileResource, Resource } from '../../src/core/declaration/schema.js';
import { BASE_HANDLERS } from '../../src/kinds/kind-handlers.js';
import { fileHandler } from '../../src/kinds/file/file-handler.js';
import { RootedFs } from '../../src/engine/converge/rooted-fs.js';
import { stepOf, type ResourceHandler } from '../../src/engine/converge/handler-types.js';
import { declaration, put, reportOf, testHost, type TestHost } from '../support/host.js';
import { hashTree } from '../support/tree.js';

let host: TestHost;
afterEach(() => host?.cleanup());

const dir = (id: string, path: string, extra: object = {}): Resource => ({ type: 'directory', id, path, ...extra });
const file = (id: string, path: string, content: string, extra: object = {}): Resource => ({ type: 'file', id, path, content, ...extra });
const at = (p: string) => join(host.root, p);
const statuses = (r: ReturnType<typeof reportOf>) => r.steps.map((s) => `${s.resource}:${s.status}`);

describe('converging directories and files', () => {
  it('creates, then changes nothing the second time and says so', async () => {
    host = testHost();
    const d = declaration([dir('app', '/srv/app', { mode: '0750' }), file('conf', '/srv/app/app.conf', 'a=1\n', { mode: '0640' })]);
    const first = reportOf(await host.apply(d));
    expect(first.outcome).toBe('converged');
    expect(statuses(first)).toEqual(['app:done', 'conf:done']);
    expect(readFileSync(at('/srv/app/app.conf'), 'utf8')).toBe('a=1\n');
    expect(lstatSync(at('/srv/app')).mode & 0o7777).toBe(0o750);
    expect(lstatSync(at('/srv/app/app.conf')).mode & 0o7777).toBe(0o640);
    const second = await host.apply(d);
    expect(second.kind === 'applied' && second.plan.steps.every((s) => s.actions.length === 0)).toBe(true);
    expect(statuses(reportOf(second))).toEqual(['app:unchanged', 'conf:unchanged']);
  });

  it('returns drift of content, mode and owner', async () => {
    host = testHost();
    const d = declaration([file('conf', '/etc/x.conf', 'one\ntwo\nthree\n', { mode: '0640' })]);
    reportOf(await host.apply(d));
    writeFileSync(at('/etc/x.conf'), 'one\n2\n');
    chmodSync(at('/etc/x.conf'), 0o644);
    chownSync(at('/etc/x.conf'), 1, 1);
    const result = await host.apply(d);
    expect(result.kind).toBe('applied');
    const step = reportOf(result).steps[0]!;
    expect(step.status).toBe('done');
    expect(step.actions).toEqual(['content (+2 −1 lines)', 'mode 0644→0640', expect.stringMatching(/^owner .+→root$/), expect.stringMatching(/^group .+→root$/)]);
    // The same, as data: what the words were made from, comparable across machines.
    expect(step.verb).toBe('update');
    expect(step.changes).toEqual([
      { kind: 'content', lines: { added: 2, removed: 1 } },
      { kind: 'mode', from: '0644', to: '0640' },
      { kind: 'owner', from: expect.any(String), to: 'root' },
      { kind: 'group', from: expect.any(String), to: 'root' },
    ]);
    const st = lstatSync(at('/etc/x.conf'));
    expect([st.mode & 0o7777, st.uid, st.gid]).toEqual([0o640, 0, 0]);
    expect(readFileSync(at('/etc/x.conf'), 'utf8')).toBe('one\ntwo\nthree\n');
  });

  it('mends a mode-only drift in place (the same inode, not a file written again); the next apply sees it unchanged without reading it', async () => {
    host = testHost();
    const d = declaration([file('conf', '/etc/x.conf', 'one\n', { mode: '0640' }), file('other', '/etc/y.conf', 'two\n')]);
    reportOf(await host.apply(d));
    const before = lstatSync(at('/etc/x.conf'));
    chmodSync(at('/etc/x.conf'), 0o600);
    writeFileSync(at('/etc/y.conf'), 'changed\n');
    const report = reportOf(await host.apply(d));
    expect(report.steps.map((s) => [s.resource, s.status, s.actions])).toEqual([
      ['conf', 'done', ['mode 0600→0640']],
      ['other', 'done', ['content (+1 −1 lines)']],
    ]);
    const after = lstatSync(at('/etc/x.conf'));
    expect([after.ino, after.mode & 0o7777]).toEqual([before.ino, 0o640]);
    expect(host.env.store.state.records.conf!.seen).toMatchObject({ ino: after.ino, ctimeMs: after.ctimeMs });
    const again = await host.apply(d);
    expect(again.kind === 'applied' && again.plan.steps.every((s) => s.actions.length === 0)).toBe(true);
  });

  it('reads and compares a drifted file once: the apply carries out what the plan found when the file still looks the same', async () => {
    host = testHost();
    const d = declaration([file('conf', '/etc/x.conf', 'one\ntwo\n')]);
    reportOf(await host.apply(d));
    writeFileSync(at('/etc/x.conf'), 'one\n');
    const reads: string[] = [];
    // Every read of the check and the apply goes through RootedFs.readFile: count them.
    const fsProto = RootedFs.prototype;
    const original = fsProto.readFile;
    fsProto.readFile = function (this: RootedFs, path: string, size: number) {
      reads.push(path);
      return original.call(this, path, size);
    };
    try {
      const report = reportOf(await host.apply(d));
      expect(report.steps[0]).toMatchObject({ status: 'done', actions: ['content (+1 −0 lines)'] });
    } finally {
      fsProto.readFile = original;
    }
    expect(reads).toEqual(['/etc/x.conf']);
  });

  it('renames between two ids at one path: removal runs first', async () => {
    host = testHost();
    reportOf(await host.apply(declaration([file('old', '/etc/x.conf', 'old\n')])));
    const result = await host.apply(declaration([file('new', '/etc/x.conf', 'new\n')], { sequence: 2 }));
    const report = reportOf(result);
    expect(statuses(report)).toEqual(['old:done', 'new:done']);
    expect(result.kind === 'applied' && result.plan.steps.map((s) => s.actions)).toEqual([['remove'], ['create']]);
    expect(readFileSync(at('/etc/x.conf'), 'utf8')).toBe('new\n');
    expect(Object.keys(host.env.store.state.records)).toEqual(['new']);
  });

  it('removes what is no longer declared, contents before their directory; leaves a directory others filled', async () => {
    host = testHost();
    reportOf(await host.apply(declaration([dir('a', '/srv/a'), file('f', '/srv/a/f', 'x'), dir('b', '/srv/b')])));
    writeFileSync(at('/srv/b/theirs'), 'not ours');
    const report = reportOf(await host.apply(declaration([])));
    expect(report.outcome).toBe('converged');
    expect(report.steps.map((s) => [s.resource, s.actions[0], s.status])).toEqual([
      ['f', 'remove', 'done'],
      ['a', 'remove', 'done'],
      ['b', 'leave', 'done'],
    ]);
    expect(existsSync(at('/srv/a'))).toBe(false);
    expect(readFileSync(at('/srv/b/theirs'), 'utf8')).toBe('not ours');
    expect(report.said.join('\n')).toContain('/srv/b holds what others put there; left in place');
    expect(host.env.store.state.records).toEqual({});
  });

  it('removes only records of the declaration\'s own origin', async () => {
    host = testHost();
    reportOf(await host.apply(declaration([file('mine', '/etc/mine', 'm')]), { origin: 'mesh', mayChangeMode: true }));
    reportOf(await host.apply(declaration([file('local', '/etc/local', 'l')], { sequence: 2 })));
    expect(existsSync(at('/etc/mine'))).toBe(true);
    expect(Object.keys(host.env.store.state.records).sort()).toEqual(['local', 'mine']);
  });

  it('a directory missing above a path that nothing declares is refused by the plan (unappliable), naming it; nothing is written', async () => {
    host = testHost();
    const d = declaration([file('ok', '/etc/ok', '1'), dir('deep', '/nope/deeper'), file('same-batch', '/etc/same', '2')]);
    const result = await host.apply(d);
    expect(result.kind).toBe('refused');
    if (result.kind !== 'refused') return;
    expect(result.refusal).toBe('unappliable');
    expect(result.details).toEqual(['deep (/nope/deeper): its directory /nope does not exist and nothing in the declaration makes it: declare it (a directory resource before this one), or make it on the machine']);
    expect(existsSync(at('/etc/ok'))).toBe(false);
    expect(existsSync(at('/etc/same'))).toBe(false);
  });

  it('stops at a step whose apply fails: what was staged before it commits, every later step is skipped', async () => {
    // A file handler whose apply of one resource finds a problem (as a link planted after the plan would).
    const failing: ResourceHandler<FileResource> = {
      ...fileHandler,
      converge: async (resource, ctx, apply) =>
        apply && resource.id === 'broken' ? { step: stepOf(resource, resource.path, 'none', []), verb: 'none', problem: 'planted meanwhile' } : fileHandler.converge(resource, ctx, apply),
    };
    host = testHost({ handlers: { ...BASE_HANDLERS, file: failing } });
    const d = declaration([file('ok', '/etc/ok', '1'), file('broken', '/etc/broken', '2'), file('later', '/etc/later', '3')]);
    const report = reportOf(await host.apply(d));
    expect(statuses(report)).toEqual(['ok:done', 'broken:failed', 'later:skipped']);
    expect(report.error).toEqual({ resource: 'broken', message: 'planted meanwhile' });
    expect(existsSync(at('/etc/ok'))).toBe(true);
    expect(existsSync(at('/etc/later'))).toBe(false);
    host.reopen();
    expect(Object.keys(host.env.store.state.records)).toEqual(['ok']);
  });

  it('on an adopted machine holds what it finds, unless the declaration takes it; gives a taken original back', async () => {
    host = testHost();
    put(host.root, '/etc/found.conf', 'theirs\n', 0o600);
    put(host.root, '/etc/taken.conf', 'original\n', 0o600);
    const d = declaration([file('found', '/etc/found.conf', 'ours\n'), file('taken', '/etc/taken.conf', 'ours\n', { take: true })], { mode: 'adopted' });
    const report = reportOf(await host.apply(d));
    expect(statuses(report)).toEqual(['found:held', 'taken:done']);
    expect(report.steps[1]!.actions).toContain('take');
    expect(readFileSync(at('/etc/found.conf'), 'utf8')).toBe('theirs\n');
    expect(readFileSync(at('/etc/taken.conf'), 'utf8')).toBe('ours\n');
    expect(report.facts.held).toEqual([{ id: 'found', target: '/etc/found.conf', reason: expect.stringContaining('left as found') }]);
    const removal = reportOf(await host.apply(declaration([], { mode: 'adopted', sequence: 2 })));
    expect(removal.steps.map((s) => s.actions)).toEqual([['remove', 'original given back']]);
    expect(readFileSync(at('/etc/taken.conf'), 'utf8')).toBe('original\n');
    expect(lstatSync(at('/etc/taken.conf')).mode & 0o7777).toBe(0o600);
    expect(readFileSync(at('/etc/found.conf'), 'utf8')).toBe('theirs\n');
  });

  it('on a converged machine takes what it finds at declared places', async () => {
    host = testHost();
    put(host.root, '/etc/found.conf', 'theirs\n');
    const report = reportOf(await host.apply(declaration([file('f', '/etc/found.conf', 'ours\n')])));
    expect(report.steps[0]!.actions[0]).toBe('take');
    expect(host.env.store.state.records.f!.created).toBe(false);
  });

  it('refuses a symbolic link planted at a declared path, naming it; nothing is touched', async () => {
    host = testHost();
    writeFileSync(at('/srv/secret'), 'secret');
    symlinkSync(at('/srv/secret'), at('/etc/x.conf'));
    const before = hashTree(host.root);
    const result = await host.apply(declaration([file('ok', '/etc/ok', 'fine'), file('x', '/etc/x.conf', 'evil')]));
    expect(result.kind).toBe('refused');
    expect(result.kind === 'refused' && result.details.join()).toContain(`/etc/x.conf is a symbolic link (to ${at('/srv/secret')}), not followed`);
    expect(hashTree(host.root)).toEqual(before);
  });

  it('refuses a symbolic link planted above a declared path, naming it', async () => {
    host = testHost();
    mkdirSync(at('/srv/elsewhere'));
    symlinkSync(at('/srv/elsewhere'), at('/etc/app'));
    const before = hashTree(host.root);
    const result = await host.apply(declaration([file('x', '/etc/app/x.conf', 'evil')]));
    expect(result.kind).toBe('refused');
    expect(result.kind === 'refused' && result.details.join()).toContain('/etc/app is a symbolic link');
    expect(hashTree(host.root)).toEqual(before);
    expect(existsSync(at('/srv/elsewhere/x.conf'))).toBe(false);
  });

  it('replaces a hard link planted at a declared path instead of writing through it', async () => {
    host = testHost();
    const d = declaration([file('x', '/etc/x.conf', 'ours\n', { mode: '0644' })]);
    reportOf(await host.apply(d));
    writeFileSync(at('/srv/shadow'), 'precious\n', { mode: 0o600 });
    const { rmSync } = await import('node:fs');
    rmSync(at('/etc/x.conf'));
    linkSync(at('/srv/shadow'), at('/etc/x.conf'));
    const report = reportOf(await host.apply(d));
    expect(report.steps[0]!.actions).toContain('hard link (2 names) replaced');
    expect(readFileSync(at('/srv/shadow'), 'utf8')).toBe('precious\n');
    expect(lstatSync(at('/srv/shadow')).mode & 0o7777).toBe(0o600);
    expect(readFileSync(at('/etc/x.conf'), 'utf8')).toBe('ours\n');
    expect(lstatSync(at('/etc/x.conf')).nlink).toBe(1);
  });

  it('a dry run plans and touches nothing', async () => {
    host = testHost();
    const before = hashTree(host.root);
    const result = await host.apply(declaration([dir('a', '/srv/a'), file('f', '/srv/a/f', 'x')]), { dryRun: true });
    expect(result).toEqual({ kind: 'planned', plan: { steps: [
      { resource: 'a', type: 'directory', target: '/srv/a', verb: 'create', changes: [{ kind: 'create' }], actions: ['create'] },
      { resource: 'f', type: 'file', target: '/srv/a/f', verb: 'create', changes: [{ kind: 'create' }], actions: ['create'] },
    ] } });
    expect(hashTree(host.root)).toEqual(before);
    expect(existsSync(join(host.stateDir, 'state.json'))).toBe(false);
  });

  it('refuses an unknown owner before touching anything', async () => {
    host = testHost();
    const before = hashTree(host.root);
    const result = await host.apply(declaration([file('a', '/etc/a', 'x'), file('b', '/etc/b', 'x', { owner: 'no-such-user-here' })]));
    expect(result.kind === 'refused' && result.details).toEqual(["b (/etc/b): owner 'no-such-user-here' does not exist on this machine"]);
    expect(hashTree(host.root)).toEqual(before);
  });
});

describe('mode and order', () => {
  it('refuses a declaration of the other mode unless the link delivered it', async () => {
    host = testHost();
    reportOf(await host.apply(declaration([], { mode: 'adopted' })));
    const refused = await host.apply(declaration([], { mode: 'converged', sequence: 2 }));
    expect(refused.kind).toBe('refused');
    expect(refused.kind === 'refused' && refused.reason).toMatch(/says converged, but this machine is recorded adopted.*'converge' act/);
    const delivered = reportOf(await host.apply(declaration([], { mode: 'converged', sequence: 2 }), { mayChangeMode: true }));
    expect(delivered.said).toContain('mode changed by the mesh: adopted → converged');
    expect(host.env.store.state.mode).toBe('converged');
  });

  it('with an epoch, refuses an older declaration and the same one with another digest', async () => {
    host = testHost();
    reportOf(await host.apply(declaration([], { epoch: 4, sequence: 10 })));
    const older = await host.apply(declaration([], { epoch: 4, sequence: 9 }));
    expect(older.kind === 'refused' && older.reason).toMatch(/stale: \(epoch 4, sequence 9\) is older than the last applied \(epoch 4, sequence 10\)/);
    const olderEpoch = await host.apply(declaration([], { epoch: 3, sequence: 99 }));
    expect(olderEpoch.kind).toBe('refused');
    const same = await host.apply(declaration([file('x', '/etc/x', 'y')], { epoch: 4, sequence: 10 }));
    expect(same.kind === 'refused' && same.reason).toMatch(/already applied with digest/);
    expect(reportOf(await host.apply(declaration([], { epoch: 5, sequence: 1 }))).outcome).toBe('converged');
  });

  it('report sequences only increase, across a reopened store', async () => {
    host = testHost();
    const a = reportOf(await host.apply(declaration([])));
    host.reopen();
    const b = reportOf(await host.apply(declaration([], { sequence: 2 })));
    expect([a.sequence, b.sequence]).toEqual([1, 2]);
  });
});
