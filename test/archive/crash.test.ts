import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { journalPath, readJournal } from '../../src/kinds/archive/journal.js';
import { projectDir, runCli } from '../support/cli.js';
import { hashTree, scratch } from '../support/tree.js';
import { gnuTar, inlineArchive } from '../support/archives.js';
import { runKilledAt, straceMissing } from '../support/crash.js';
import { leaks, pathsUnder } from '../support/leaks.js';
import { peekState } from '../../src/core/store/store.js';

/**
 * A crash (SIGKILL, injected by strace at a rename or an open, and proved by strace's log to have ended
 * the apply in that call) in the middle of replacing an archive's contents:
 * whatever instant it lands, the journal names everything of the host's in the target, and after the
 * restart's apply the journal and the machine agree on the new archive exactly, and nothing is left on
 * the root or in the state directory that the store does not account for. The instants: at the
 * rename of the journal naming the old and the new entries (the main thread's first rename), just
 * after it (the journal folder opened to be flushed), at the Nth of the 50 files' renames (strace
 * counts per thread, so the files are renamed by one libuv thread), at the rename of the first of the
 * new archive's two links (made after every file, on the same thread), and just after the journal of
 * the new set is saved, before the store is.
 */
let cleanups: Array<() => void> = [];
afterEach(() => {
  cleanups.forEach((c) => c());
  cleanups = [];
});

function setup() {
  const s = scratch('mesh-host-archive-crash-');
  cleanups.push(s.cleanup);
  const root = join(s.dir, 'root');
  mkdirSync(join(root, 'opt'), { recursive: true });
  const make = (name: string, files: Record<string, string>, links: Record<string, string> = {}) => {
    const dir = join(s.dir, name);
    mkdirSync(dir);
    for (const [file, content] of Object.entries(files)) writeFileSync(join(dir, file), content);
    for (const [link, text] of Object.entries(links)) symlinkSync(text, join(dir, link));
    gnuTar(['czf', `${dir}.tgz`, '-C', dir, '.']);
    const decl = join(s.dir, `${name}.json`);
    writeFileSync(decl, JSON.stringify({ version: 1, node: 'n1', mode: 'converged', sequence: 1, resources: [inlineArchive('app', '/opt/app', `${dir}.tgz`)] }));
    return { dir, decl };
  };
  const v1: Record<string, string> = {};
  const v2: Record<string, string> = {};
  for (let i = 0; i < 40; i++) {
    v1[`a${i}`] = `one ${i}\n`;
    v2[`a${i}`] = `two ${i}\n`;
  }
  for (let i = 0; i < 10; i++) {
    v1[`old${i}`] = 'old\n';
    v2[`new${i}`] = 'new\n';
  }
  const config = join(s.dir, 'host.json');
  writeFileSync(config, JSON.stringify({ node: 'n1' }));
  const state = join(s.dir, 'state');
  return { root, state, flags: ['--root', root, '--state-dir', state, '--config', config, '--log-level', 'warn'], one: make('v1', v1), two: make('v2', v2, { current: 'a0', newest: 'current' }) };
}

/** The target as names and contents, without the write path's temporaries (a restart removes them). */
function contents(dir: string, withTemporaries = false): Record<string, string> {
  return Object.fromEntries(
    Object.entries(hashTree(dir))
      .filter(([name]) => name !== '.' && (withTemporaries || !/(^|\/)\.[^/]*\.mesh-host-/.test(name)))
      .map(([name, value]) => [name, value.split(' ').slice(0, 2).join(' ')]),
  );
}

/** Where strace must show the apply killed: the journal's temporary renamed over it, its folder opened to be flushed, a new file's temporary renamed to its name. */
const JOURNAL_RENAME = /^\d+\s+rename\("[^"]*\/state\/unpacked\/[0-9a-f]{64}\.json\.tmp-[^"]+", "[^"]*\/state\/unpacked\/[0-9a-f]{64}\.json"/;
const JOURNAL_FLUSH = /^\d+\s+openat\(AT_FDCWD(<[^>]*>)?, "[^"]*\/state\/unpacked", [^)]*O_DIRECTORY/;
const LINK_RENAME = /^\d+\s+rename\("\/proc\/self\/fd\/\d+\/\.(current|newest)\.mesh-host-[^"]+", "\/proc\/self\/fd\/\d+\/\1"[ )]/;
const FILE_RENAME = /^\d+\s+rename\("\/proc\/self\/fd\/\d+\/\.(a\d+|new\d+)\.mesh-host-[^"]+", "\/proc\/self\/fd\/\d+\/\1"[ )]/;

describe.skipIf(straceMissing && !process.env.CI)('a SIGKILL in the middle of replacing an archive', () => {
  const instants: Array<[string, { when: number; afterJournal?: true; place: RegExp }]> = [
    ['the journal naming old and new is renamed into place', { when: 1, place: JOURNAL_RENAME }],
    ['the journal naming old and new is saved', { when: 1, afterJournal: true, place: JOURNAL_FLUSH }],
    ['the 2nd file is renamed', { when: 2, place: FILE_RENAME }],
    ['the 20th file is renamed', { when: 20, place: FILE_RENAME }],
    ['the 50th (last) file is renamed', { when: 50, place: FILE_RENAME }],
    ['the first link is renamed into place', { when: 51, place: LINK_RENAME }],
    ['the journal of the new set is saved, before the store', { when: 2, afterJournal: true, place: JOURNAL_FLUSH }],
  ];
  it.each(instants)('killed when %s: the journal names all that is the host\'s, and after the restart the journal and the machine agree', async (_name, { when, afterJournal, place }) => {
    const s = setup();
    const found = pathsUnder(s.root);
    const first = await runCli('mesh-host', ['apply', s.one.decl, ...s.flags]);
    expect(first.code, first.stderr).toBe(0);
    const appliedFirst = peekState(s.state)?.lastApplied?.digest;

    const at = afterJournal ? { syscall: 'openat', when, path: dirname(journalPath(s.state, '/opt/app')) } : { syscall: 'rename', when };
    const killed = runKilledAt([process.execPath, join(projectDir, 'bin/mesh-host'), 'apply', s.two.decl, ...s.flags], at, { UV_THREADPOOL_SIZE: '1' });
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    expect(killed.killedAt, 'strace shows the call the apply was killed in').toMatch(place);
    expect(killed.stderr + killed.stdout).not.toMatch(/converged \(report/);
    // Every instant is before the store's save: the store still holds the first archive's apply.
    expect(peekState(s.state)?.lastApplied?.digest).toBe(appliedFirst);

    // At the instant of the crash: everything in the target is named by the journal.
    const journal = readJournal(s.state, '/opt/app')!;
    const named = new Set(journal.entries.map((e) => e.name));
    expect(Object.keys(contents(join(s.root, 'opt/app'))).filter((name) => !named.has(name))).toEqual([]);

    // The restart: leftovers undone, the replacement finished.
    const again = await runCli('mesh-host', ['apply', s.two.decl, ...s.flags]);
    expect(again.code, again.stderr + again.stdout).toBe(0);
    const after = readJournal(s.state, '/opt/app')!;
    expect(after).toMatchObject({ complete: true, sha256: JSON.parse(readFileSync(s.two.decl, 'utf8')).resources[0].sha256 });
    const onDisk = contents(join(s.root, 'opt/app'), true);
    expect(Object.keys(onDisk).sort()).toEqual(after.entries.map((e) => e.name).sort());
    expect(onDisk).toEqual(contents(s.two.dir));
    expect(leaks({ root: s.root, stateDir: s.state }, found)).toEqual([]);

    const noop = await runCli('mesh-host', ['apply', s.two.decl, ...s.flags, '--json']);
    expect(noop.code).toBe(0);
    expect((JSON.parse(noop.stdout) as { report: { outcome: string; steps: Array<{ status: string }> } }).report.steps.map((st) => st.status)).toEqual(['unchanged']);
  });
});
