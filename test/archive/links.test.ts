import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readJournal, type Journal } from '../../src/kinds/archive/journal.js';
import { DEFAULT_ARCHIVE_LIMITS } from '../../src/core/config/archive-limits.js';
import { readArchive } from '../../src/kinds/archive/archive-read.js';
import type { ApplyResult } from '../../src/engine/apply/apply.js';
import { declaration, reportOf, testHost, type TestHost } from '../support/host.js';
import { hashTree } from '../support/tree.js';
import { gnuTar, inlineArchive, memoryObjects, sha256Of } from '../support/archives.js';
import { DIR_THEN_LINK, LINK_CORPUS, LONG_LINK, longLinkArchive, RELEASE_TREE, type LinkCase } from '../support/link-corpus.js';

/**
 * The link corpus (test/support/link-corpus.ts) through the whole apply: an accepted archive stands in
 * its target as listed, links as links and hard links as one file, and its journal names each link as
 * the archive's own; a refused one leaves the whole scratch folder as it was. Either way, everything
 * outside the target (the rest of the root, a folder beside it, the state directory but for the
 * store, the outbox, the journal and the kept archive) fingerprints the same before and after.
 */
const work = mkdtempSync(join(tmpdir(), 'mesh-host-links-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const files = new Map<string, string>();
beforeAll(() => {
  for (const [i, c] of LINK_CORPUS.entries()) {
    const out = join(work, `case-${i}.tar`);
    c.build(out, mkdtempSync(join(work, 'tree-')));
    files.set(c.name, out);
  }
});

let host: TestHost;
afterEach(() => host?.cleanup());
const TARGET = '/opt/app';
const target = () => join(host.root, 'opt/app');
const scratchDir = () => dirname(host.root);

/** State files an archive apply may leave: the store, its outbox, journals of unpacked targets, kept archives. */
const EXPECTED_STATE = [/^state\.json$/, /^records\.\d+\.jsonl$/, /^intents/, /^outbox/, /^unpacked\/?$/, /^unpacked\/[0-9a-f]{64}\.json$/, /^archives\/?$/, /^archives\/[0-9a-f]{64}$/];

/** Everything in the scratch folder but the target and the state files an apply is expected to change; plus any state file not expected at all. */
function outsideTarget(): { tree: Record<string, string>; unexpected: string[] } {
  const tree = Object.fromEntries(Object.entries(hashTree(scratchDir())).filter(([path]) => !path.startsWith('root/opt/app') && !path.startsWith('state')));
  const unexpected: string[] = [];
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(host.stateDir, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (!EXPECTED_STATE.some((re) => re.test(path))) unexpected.push(path);
      if (entry.isDirectory() && !path.startsWith('outbox')) walk(path);
    }
  };
  if (existsSync(host.stateDir)) walk('');
  return { tree, unexpected };
}

/** How the target stands, in the corpus's words. */
function standing(dir: string, listed: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, want] of Object.entries(listed)) {
    const path = join(dir, name);
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (!st) out[name] = 'missing';
    else if (st.isSymbolicLink()) out[name] = `link:${readlinkSync(path)}`;
    else if (st.isDirectory()) out[name] = 'dir';
    else if (want.startsWith('same:')) out[name] = lstatSync(join(dir, want.slice(5))).ino === st.ino ? want : `file not linked (ino ${st.ino})`;
    else out[name] = `file:${readFileSync(path, 'utf8')}`;
  }
  // Nothing else stands in the target.
  for (const name of Object.keys(hashTree(dir))) if (name !== '.' && !(name in listed)) out[name] = 'unlisted';
  return out;
}

/** The journal's entries as the corpus lists them. */
function journaled(journal: Journal): Record<string, string> {
  return Object.fromEntries(journal.entries.map((e) => [e.name, e.type === 'symlink' ? `link:${e.link}` : e.type === 'hardlink' ? `same:${e.link}` : e.type]));
}
const corpusAsJournal = (tree: Record<string, string>) => Object.fromEntries(Object.entries(tree).map(([name, want]) => [name, want.startsWith('file:') ? 'file' : want]));

/** The scratch folder's fingerprint but for the store's own files (a refusal is recorded and reported). */
const keep = (tree: Record<string, string>) => Object.fromEntries(Object.entries(tree).filter(([p]) => !/^state\/(state\.json|records|outbox)/.test(p)));

const saidOf = (result: ApplyResult) => (result.kind === 'refused' ? [result.reason, ...result.details].join('\n') : result.kind === 'applied' ? JSON.stringify(result.report) : result.kind);

async function freshHost(): Promise<void> {
  host = testHost({ kinds: {}, dirs: ['etc', 'opt'] });
  mkdirSync(join(scratchDir(), 'outside'));
  writeFileSync(join(scratchDir(), 'outside/secret'), 'kept');
  writeFileSync(join(host.root, 'etc/passwd'), 'root:x:0:0\n');
  await host.apply(declaration([])); // the store exists before, so that only its content may change
}

const accepted = LINK_CORPUS.filter((c) => c.tree);
const refused = LINK_CORPUS.filter((c) => c.refused);

describe('an archive whose links stay inside the target unpacks them as links', () => {
  it.each(accepted.map((c) => [c.name, c] as const))('%s', async (_name, c: LinkCase) => {
    await freshHost();
    const before = outsideTarget();
    const resource = inlineArchive('app', TARGET, files.get(c.name)!);
    const report = reportOf(await host.apply(declaration([resource])));
    expect(report.outcome, JSON.stringify(report.steps)).toBe('converged');
    expect(standing(target(), c.tree!)).toEqual(c.tree);
    const links = Object.values(c.tree!).filter((v) => v.startsWith('link:') || v.startsWith('same:')).length;
    expect(report.steps[0]!.changes).toContainEqual(expect.objectContaining({ kind: 'unpack', links }));
    expect(journaled(readJournal(host.stateDir, TARGET)!)).toEqual(corpusAsJournal(c.tree!));
    expect(outsideTarget()).toEqual(before);

    // Kept: the next apply finds it as the archive has it and writes nothing.
    const unpacked = hashTree(target());
    const again = reportOf(await host.apply(declaration([resource])));
    expect(again.steps.map((s) => s.status)).toEqual(['unchanged']);
    expect(hashTree(target())).toEqual(unpacked);
  });
});

describe('an archive with a link that could reach outside is refused whole, nothing written', () => {
  it.each(refused.map((c) => [c.name, c] as const))('%s', async (_name, c: LinkCase) => {
    await freshHost();
    const before = { scratch: hashTree(scratchDir()), state: outsideTarget().unexpected };
    const result = await host.apply(declaration([inlineArchive('app', TARGET, files.get(c.name)!)]));
    expect(result.kind, saidOf(result)).toBe('refused');
    expect(saidOf(result)).toContain(c.refused!.says);
    // The whole scratch folder, target and state included, but for the store's record of the refusal.
    expect(keep(hashTree(scratchDir()))).toEqual(keep(before.scratch));
    expect(existsSync(target())).toBe(false);
    await expect(readArchive({ kind: 'file', path: files.get(c.name)! }, DEFAULT_ARCHIVE_LIMITS)).rejects.toMatchObject({ name: 'ArchiveRefused', kind: c.refused!.kind });
  });
});

describe('a release with links is kept', () => {
  const release = () => inlineArchive('app', TARGET, files.get(LINK_CORPUS[0]!.name)!);

  it('a link changed or removed by hand, and a hard link made a copy, are put back at the next apply; nothing outside is touched', async () => {
    await freshHost();
    expect(reportOf(await host.apply(declaration([release()]))).outcome).toBe('converged');
    const before = outsideTarget();
    unlinkSync(join(target(), 'bin/tool'));
    symlinkSync('/etc/passwd', join(target(), 'bin/tool'));
    unlinkSync(join(target(), 'lib/libfoo.so'));
    unlinkSync(join(target(), 'current'));
    symlinkSync('../../outside', join(target(), 'current'));
    unlinkSync(join(target(), 'lib/libfoo.so.1.2.3'));
    writeFileSync(join(target(), 'lib/libfoo.so.1.2.3'), 'ELF libfoo 1.2.3');

    const report = reportOf(await host.apply(declaration([release()])));
    expect(report.outcome, JSON.stringify(report.steps)).toBe('converged');
    // Said as data (the relink change) and in words made from it.
    expect(report.steps[0]!.changes).toContainEqual({
      kind: 'relink', entries: 4,
      links: [
        { name: 'bin/tool', to: '../lib/tool/main.js', was: '/etc/passwd' },
        { name: 'current', to: 'versions/1.2', was: '../../outside' },
        { name: 'lib/libfoo.so', to: 'libfoo.so.1' },
        { name: 'lib/libfoo.so.1.2.3', to: 'lib/libfoo-compat.so.1.2.3', hard: true },
      ],
    });
    expect(report.steps[0]!.actions.join(' ')).toContain('relink 4 links: bin/tool → ../lib/tool/main.js (was /etc/passwd), current → versions/1.2 (was ../../outside)');
    expect(standing(target(), RELEASE_TREE)).toEqual(RELEASE_TREE);
    expect(outsideTarget()).toEqual(before);
    expect(readFileSync(join(scratchDir(), 'outside/secret'), 'utf8')).toBe('kept');
  });

  it('a release unpacked by hand is taken over: its links, already as the archive has them, are kept; removal gives the files back (a found hard link as a copy) and leaves the links found', async () => {
    await freshHost();
    mkdirSync(target());
    gnuTar(['xf', files.get(LINK_CORPUS[0]!.name)!, '-C', target()]);
    const foundLink = lstatSync(join(target(), 'bin/tool')).ino;
    const report = reportOf(await host.apply(declaration([{ ...release(), take: true }])));
    expect(report.outcome, JSON.stringify(report.steps)).toBe('converged');
    expect(report.steps[0]!.verb).toBe('take');
    expect(standing(target(), RELEASE_TREE)).toEqual(RELEASE_TREE);
    const journal = readJournal(host.stateDir, TARGET)!;
    expect(journal.entries.find((e) => e.name === 'bin/tool')).toMatchObject({ type: 'symlink', link: '../lib/tool/main.js', original: { uid: 0, gid: 0 } });
    expect(lstatSync(join(target(), 'bin/tool')).ino).toBe(foundLink); // a link found as the archive has it is not made again

    const removal = reportOf(await host.apply(declaration([])));
    expect(removal.outcome, JSON.stringify(removal.steps)).toBe('converged');
    // Given back: the files as found (each from its kept copy, so the found pair of hard links comes back as two files), the links left as found.
    const givenBack = { ...RELEASE_TREE, 'lib/libfoo.so.1.2.3': 'file:ELF libfoo 1.2.3' };
    expect(standing(target(), givenBack)).toEqual(givenBack);
  });

  it('removal takes off the links as names, never what they point to', async () => {
    await freshHost();
    expect(reportOf(await host.apply(declaration([release()]))).outcome).toBe('converged');
    const before = outsideTarget();
    const report = reportOf(await host.apply(declaration([])));
    expect(report.outcome, JSON.stringify(report.steps)).toBe('converged');
    expect(existsSync(target())).toBe(false);
    expect(readJournal(host.stateDir, TARGET)).toBeUndefined();
    expect(outsideTarget()).toEqual(before);
  });

  it('a directory replaced by a link between two archives, and back: the old entries go first, nothing is written through the link', async () => {
    await freshHost();
    const dirs = join(work, 'dir.tar');
    const link = join(work, 'link.tar');
    DIR_THEN_LINK.dir(dirs);
    DIR_THEN_LINK.link(link);
    expect(reportOf(await host.apply(declaration([inlineArchive('app', TARGET, dirs)]))).outcome).toBe('converged');
    const before = outsideTarget();

    const toLink = reportOf(await host.apply(declaration([inlineArchive('app', TARGET, link)])));
    expect(toLink.outcome, JSON.stringify(toLink.steps)).toBe('converged');
    const linked = { lib: 'link:lib64', lib64: 'dir', 'lib64/a': 'file:sixty-four' };
    expect(standing(target(), linked)).toEqual(linked);
    expect(journaled(readJournal(host.stateDir, TARGET)!)).toEqual(corpusAsJournal(linked));

    const back = reportOf(await host.apply(declaration([inlineArchive('app', TARGET, dirs)])));
    expect(back.outcome, JSON.stringify(back.steps)).toBe('converged');
    const unlinked = { lib: 'dir', 'lib/a': 'file:one', lib64: 'dir', 'lib64/a': 'file:sixty-four' };
    expect(standing(target(), unlinked)).toEqual(unlinked); // lib/a written into a new directory, not through the old link into lib64
    expect(outsideTarget()).toEqual(before);
  });

  it('a directory replaced by a link pointing out is refused whole: the first archive stays as it was', async () => {
    await freshHost();
    const dirs = join(work, 'dir-2.tar');
    const out = join(work, 'out.tar');
    DIR_THEN_LINK.dir(dirs);
    DIR_THEN_LINK.out(out);
    expect(reportOf(await host.apply(declaration([inlineArchive('app', TARGET, dirs)]))).outcome).toBe('converged');
    const before = hashTree(scratchDir());
    const result = await host.apply(declaration([inlineArchive('app', TARGET, out)]));
    expect(result.kind, saidOf(result)).toBe('refused');
    expect(keep(hashTree(scratchDir()))).toEqual(keep(before));
  });
});

describe('a refusal found only at the apply (an object fetched then) reports the whole value', () => {
  it("the report's error names the resource, the entry and the 1,210-character link text whole; its message cuts it", async () => {
    await freshHost();
    const file = join(work, 'long-object.tar');
    longLinkArchive(file);
    host.kinds({ archiveObjects: () => async () => memoryObjects(new Map([['long.tar', readFileSync(file)]])) });
    const before = hashTree(scratchDir());
    const report = reportOf(await host.apply(declaration([{ type: 'archive', id: 'app', path: TARGET, sha256: sha256Of(file), source: { object: 'long.tar' } }])));
    expect(report.outcome).toBe('failed');
    expect(report.error?.subjects).toEqual([{ resource: 'app', kind: 'link-entry', entry: 'deep', link: LONG_LINK }]);
    expect(report.error?.message).toContain(`(${LONG_LINK.length} characters)`);
    expect(report.error?.message).not.toContain(LONG_LINK);
    expect(keep(hashTree(scratchDir()))).toEqual(keep(before));
  });
});
