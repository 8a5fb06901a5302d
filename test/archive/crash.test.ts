import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { journalPath, readJournal } from '../../src/archive/journal.js';
import { systemRunner } from '../../src/system/runner.js';
import { projectDir, runCli } from '../support/cli.js';
import { hashTree, scratch } from '../support/tree.js';
import { gnuTar, inlineArchive } from '../support/archives.js';

/**
 * A crash (SIGKILL, injected by strace at a rename) in the middle of replacing an archive's contents:
 * whatever instant it lands, the journal names everything of the host's in the target, and after the
 * restart's apply the journal and the machine agree on the new archive exactly. The instants: at the
 * rename of the journal naming the old and the new entries (the main thread's first rename), just
 * after it (the journal folder opened to be flushed), at the Nth of the 50 files' renames (strace
 * counts per thread, so the files are renamed by one libuv thread), and just after the journal of the
 * new set is saved, before the store is.
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
  const make = (name: string, files: Record<string, string>) => {
    const dir = join(s.dir, name);
    mkdirSync(dir);
    for (const [file, content] of Object.entries(files)) writeFileSync(join(dir, file), content);
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
  return { root, state, flags: ['--root', root, '--state-dir', state, '--config', config, '--log-level', 'warn'], one: make('v1', v1), two: make('v2', v2) };
}

/** The target as names and contents, without the write path's temporaries (a restart removes them). */
function contents(dir: string, withTemporaries = false): Record<string, string> {
  return Object.fromEntries(
    Object.entries(hashTree(dir))
      .filter(([name]) => name !== '.' && (withTemporaries || !/(^|\/)\.[^/]*\.mesh-host-/.test(name)))
      .map(([name, value]) => [name, value.split(' ').slice(0, 2).join(' ')]),
  );
}

describe('a SIGKILL in the middle of replacing an archive', () => {
  const instants: Array<[string, { when: number; afterJournal?: true }]> = [
    ['the journal naming old and new is renamed into place', { when: 1 }],
    ['the journal naming old and new is saved', { when: 1, afterJournal: true }],
    ['the 2nd file is renamed', { when: 2 }],
    ['the 20th file is renamed', { when: 20 }],
    ['the 50th (last) file is renamed', { when: 50 }],
    ['the journal of the new set is saved, before the store', { when: 2, afterJournal: true }],
  ];
  it.each(instants)('killed when %s: the journal names all that is the host\'s, and after the restart the journal and the machine agree', async (_name, { when, afterJournal }) => {
    const s = setup();
    const first = await runCli('mesh-host', ['apply', s.one.decl, ...s.flags]);
    expect(first.code, first.stderr).toBe(0);

    const at = afterJournal ? ['-P', dirname(journalPath(s.state, '/opt/app')), '-e', 'trace=openat', '-e', `inject=openat:signal=SIGKILL:when=${when}`] : ['-e', 'trace=rename', '-e', `inject=rename:signal=SIGKILL:when=${when}`];
    const killed = await systemRunner().run('strace', ['-f', '-qq', '-o', '/dev/null', ...at, process.execPath, join(projectDir, 'bin/mesh-host'), 'apply', s.two.decl, ...s.flags], { timeoutMs: 60_000, env: { ...process.env, UV_USE_IO_URING: '0', UV_THREADPOOL_SIZE: '1' } });
    expect(killed.code, killed.stderr).not.toBe(0);
    expect(killed.stderr + killed.stdout).not.toMatch(/converged \(report/);

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

    const noop = await runCli('mesh-host', ['apply', s.two.decl, ...s.flags, '--json']);
    expect(noop.code).toBe(0);
    expect((JSON.parse(noop.stdout) as { report: { outcome: string; steps: Array<{ status: string }> } }).report.steps.map((st) => st.status)).toEqual(['unchanged']);
  });
});
