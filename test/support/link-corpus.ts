import { linkSync, mkdirSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ArchiveRefusalKind } from '../../src/kinds/archive/refusal.js';
import { gnuTar, pyTar, type PyEntry } from './archives.js';

/**
 * Archives with links, shaped like real releases and real attacks, built in the test (deterministic:
 * Python's tarfile writes plain tar with mtime 0 and owner 0; GNU tar is told its order, times and
 * owners). Each says what it proves. Accepted ones list how the target must stand after the unpack:
 * a file by content, a directory, a symbolic link by its text, a hard link by the name it shares.
 */
export interface LinkCase {
  name: string;
  proves: string;
  build: (out: string, scratch: string) => void;
  /** Accepted: the target after the unpack ('dir', 'file:CONTENT', 'link:TEXT', 'same:NAME'). */
  tree?: Record<string, string>;
  /** Refused: the refusal's kind, and a word of its message. */
  refused?: { kind: ArchiveRefusalKind; says: string };
}

const py = (entries: PyEntry[]) => (out: string) => pyTar(out, entries, { gzip: false });

/** A release as `tar` makes it from a tree holding links (the way Node.js, JDK and library tarballs ship). */
function gnuRelease(out: string, scratch: string): void {
  const dir = join(scratch, 'release-tree');
  const file = (name: string, content: string, mode = 0o644) => {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
    chmodSync(join(dir, name), mode);
  };
  const link = (name: string, text: string) => symlinkSync(text, join(dir, name));
  file('lib/tool/main.js', '#!/usr/bin/env node\nconsole.log("tool")\n', 0o755);
  file('lib/libfoo.so.1.2.3', 'ELF libfoo 1.2.3');
  file('versions/1.2/VERSION', '1.2\n');
  file('share/doc/README', 'read me\n');
  mkdirSync(join(dir, 'bin'));
  link('bin/tool', '../lib/tool/main.js');
  link('lib/libfoo.so.1', 'libfoo.so.1.2.3');
  link('lib/libfoo.so', 'libfoo.so.1');
  link('current', 'versions/1.2');
  link('latest', 'current');
  link('doc', 'share/doc');
  link('bin/version', '../latest/VERSION');
  linkSync(join(dir, 'lib/libfoo.so.1.2.3'), join(dir, 'lib/libfoo-compat.so.1.2.3'));
  gnuTar(['cf', out, '--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '-C', dir, '.']);
}

export const RELEASE_TREE: Record<string, string> = {
  bin: 'dir',
  'bin/tool': 'link:../lib/tool/main.js',
  'bin/version': 'link:../latest/VERSION',
  current: 'link:versions/1.2',
  latest: 'link:current',
  doc: 'link:share/doc',
  lib: 'dir',
  'lib/tool': 'dir',
  'lib/tool/main.js': 'file:#!/usr/bin/env node\nconsole.log("tool")\n',
  // GNU tar stores the first name it meets in its order as the file, the second as a hard link to it.
  'lib/libfoo-compat.so.1.2.3': 'file:ELF libfoo 1.2.3',
  'lib/libfoo.so.1.2.3': 'same:lib/libfoo-compat.so.1.2.3',
  'lib/libfoo.so.1': 'link:libfoo.so.1.2.3',
  'lib/libfoo.so': 'link:libfoo.so.1',
  share: 'dir',
  'share/doc': 'dir',
  'share/doc/README': 'file:read me\n',
  versions: 'dir',
  'versions/1.2': 'dir',
  'versions/1.2/VERSION': 'file:1.2\n',
};

export const LINK_CORPUS: LinkCase[] = [
  {
    name: 'a release made by GNU tar',
    proves: 'a bin link into lib, versioned .so links, a link to a directory, a chain of links (latest → current → versions/1.2) and a link through that chain, and a hard link GNU tar stores for a second name, all unpack as links',
    build: gnuRelease,
    tree: RELEASE_TREE,
  },
  {
    name: "a link to '..' and back in",
    proves: "a link may climb with '..' as long as it never leaves the target: up two levels to the target itself, and up and back down into a sibling",
    build: py([{ name: 'a/b', type: 'dir' }, { name: 'c/file', data: 'c' }, { name: 'a/b/up', type: 'symlink', linkname: '../../c/file' }, { name: 'a/b/top', type: 'symlink', linkname: '../..' }]),
    tree: { a: 'dir', 'a/b': 'dir', 'a/b/up': 'link:../../c/file', 'a/b/top': 'link:../..', c: 'dir', 'c/file': 'file:c' },
  },
  {
    name: 'a link that dangles inside the target',
    proves: 'a link whose last component names nothing of the archive is made (a release may link to what an install adds later); only the directories it passes through must be the archive\'s',
    build: py([{ name: 'lib/libbar.so.2.0', data: 'bar' }, { name: 'lib/libbar.so', type: 'symlink', linkname: 'libbar.so.2' }]),
    tree: { lib: 'dir', 'lib/libbar.so.2.0': 'file:bar', 'lib/libbar.so': 'link:libbar.so.2' },
  },
  {
    name: 'a hard link to an earlier entry (tarfile)',
    proves: 'a hard link naming a file listed before it becomes a second name of the same file in the target',
    build: py([{ name: 'data/a', data: 'shared' }, { name: 'data/b', type: 'hardlink', linkname: 'data/a' }]),
    tree: { data: 'dir', 'data/a': 'file:shared', 'data/b': 'same:data/a' },
  },
  {
    name: "a link that leaves by '..' and comes back by the target's name",
    proves: "the resolution is lexical and step by step: leaving the target once is refused even when the path names the target again (/opt/app/../app/c)",
    build: py([{ name: 'c/file', data: 'c' }, { name: 'a/up', type: 'symlink', linkname: '../../app/c/file' }]),
    refused: { kind: 'link-entry', says: 'leaves the target' },
  },
  {
    name: 'a link whose target names another link pointing out',
    proves: "x/l2 → '..' stays inside on its own, but l1 → 'x/l2/..' passes through it to the target's parent: links met on the way are followed as the kernel would, not read as plain names",
    build: py([{ name: 'x', type: 'dir' }, { name: 'x/l2', type: 'symlink', linkname: '..' }, { name: 'l1', type: 'symlink', linkname: 'x/l2/..' }]),
    refused: { kind: 'link-entry', says: "through the link 'x/l2'" },
  },
  {
    name: 'a link to a link that points out',
    proves: 'a chain whose last link leaves the target is refused whole, the inside links with it',
    build: py([{ name: 'x/out', type: 'symlink', linkname: '../../outside/secret' }, { name: 'hop', type: 'symlink', linkname: 'x/out' }]),
    refused: { kind: 'link-entry', says: 'leaves the target' },
  },
  {
    name: 'a link made before a file of the same name',
    proves: 'the classic write-through: a link then a file at its name is the same name twice, refused before anything is written',
    build: py([{ name: 'data/conf', data: 'real' }, { name: 'etc/conf', type: 'symlink', linkname: '../data/conf' }, { name: 'etc/conf', data: 'written through' }]),
    refused: { kind: 'duplicate-entry', says: 'a second time' },
  },
  {
    name: 'a link to a directory, then a file below it',
    proves: 'no entry is ever written through a link the archive made: a name below a link is refused',
    build: py([{ name: 'real', type: 'dir' }, { name: 'lib', type: 'symlink', linkname: 'real' }, { name: 'lib/evil', data: 'x' }]),
    refused: { kind: 'duplicate-entry', says: 'which the archive holds as a symbolic link' },
  },
  {
    name: 'a pax path over a link',
    proves: "a pax header's path overrides the harmless ustar name and lands below a link: read as the pax path, and refused",
    build: py([{ name: 'sub', type: 'dir' }, { name: 'l', type: 'symlink', linkname: 'sub' }, { name: 'harmless', data: 'x', pax: { path: 'l/evil' } }]),
    refused: { kind: 'duplicate-entry', says: 'which the archive holds as a symbolic link' },
  },
  {
    name: 'a pax linkpath over an inside link',
    proves: "a pax header's linkpath overrides the ustar link text ('sub', inside) with one that leaves: the pax text is the one checked",
    build: py([{ name: 'sub', type: 'dir' }, { name: 's', type: 'symlink', linkname: 'sub', pax: { linkpath: '../../outside' } }]),
    refused: { kind: 'link-entry', says: 'leaves the target' },
  },
  {
    name: 'a hard link to a later entry',
    proves: 'a hard link must name a file the archive listed before it; one naming a later entry could be made to anything standing there first',
    build: py([{ name: 'h', type: 'hardlink', linkname: 'f' }, { name: 'f', data: 'f' }]),
    refused: { kind: 'link-entry', says: 'no such entry before it' },
  },
  {
    name: 'a hard link to a directory',
    proves: 'a hard link names a file, never a directory',
    build: py([{ name: 'd', type: 'dir' }, { name: 'h', type: 'hardlink', linkname: 'd' }]),
    refused: { kind: 'link-entry', says: 'it is a directory' },
  },
  {
    name: 'a link through a name the archive does not hold',
    proves: "'missing/..' would resolve through whatever stands at 'missing' on the machine (a link to / included): a directory passed through must be the archive's",
    build: py([{ name: 'x', data: 'x' }, { name: 'l', type: 'symlink', linkname: 'missing/../x' }]),
    refused: { kind: 'link-entry', says: 'not a directory the archive holds' },
  },
  {
    name: 'a loop of links',
    proves: 'a → b → a ends the resolution after 40 links, as the kernel does, and is refused',
    build: py([{ name: 'a', type: 'symlink', linkname: 'b/x' }, { name: 'b', type: 'symlink', linkname: 'a/x' }]),
    refused: { kind: 'link-entry', says: 'more than 40 links' },
  },
  {
    name: 'an absolute link',
    proves: 'a link to an absolute path is refused whatever it names',
    build: py([{ name: 'passwd', type: 'symlink', linkname: '/etc/passwd' }]),
    refused: { kind: 'link-entry', says: 'an absolute target' },
  },
];

/** A link whose 1,210-character text leaves the target: its refusal shows it cut, the data keeps it whole. */
export const LONG_LINK = `${'../'.repeat(400)}etc/shadow`;
export const longLinkArchive = py([{ name: 'deep', type: 'symlink', linkname: LONG_LINK }]);

/** Two archives of one target: a directory, then a link at its name (and back), the way a release moves lib/ to lib64/. */
export const DIR_THEN_LINK = {
  dir: py([{ name: 'lib/a', data: 'one' }, { name: 'lib64/a', data: 'sixty-four' }]),
  link: py([{ name: 'lib64/a', data: 'sixty-four' }, { name: 'lib', type: 'symlink', linkname: 'lib64' }]),
  out: py([{ name: 'lib64/a', data: 'sixty-four' }, { name: 'lib', type: 'symlink', linkname: '../../outside' }]),
};
