import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, chmodSync, truncateSync, existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readArchive } from '../../src/kinds/archive/archive-read.js';
import { DEFAULT_ARCHIVE_LIMITS } from '../../src/core/config/archive-limits.js';
import type { ArchiveRefusalKind } from '../../src/kinds/archive/refusal.js';
import type { Resource } from '../../src/core/declaration/schema.js';
import { declaration, testHost, type TestHost } from '../support/host.js';
import { hashTree } from '../support/tree.js';
import { gnuTar, inlineArchive, memoryObjects, pyTar, sha256Of } from '../support/archives.js';

/**
 * Every hostile archive of the list is refused whole, with nothing written: the scratch root and a
 * folder beside it fingerprint the same before and after, and the state directory gains no journal
 * and no temporary file (only the failure's report and record may change). Archives are built with
 * GNU tar and Python's tarfile.
 */
const work = mkdtempSync(join(tmpdir(), 'mesh-host-hostile-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const at = (name: string) => join(work, name);

interface Case {
  name: string;
  kind: ArchiveRefusalKind;
  make: () => string;
  limits?: Partial<typeof DEFAULT_ARCHIVE_LIMITS>;
  /** Plants something on the machine before the apply. */
  plant?: (host: TestHost, outside: string) => void;
  /** The declared digest, when it should not be the archive's. */
  sha256?: string;
}

function tree(name: string, build: (dir: string) => void): string {
  const dir = at(`${name}.d`);
  mkdirSync(dir, { recursive: true });
  build(dir);
  return dir;
}

const good = () => {
  const out = at('good.tgz');
  if (!existsSync(out)) {
    const dir = tree('good', (d) => {
      mkdirSync(join(d, 'bin'));
      writeFileSync(join(d, 'bin/run'), '#!/bin/sh\necho run\n', { mode: 0o755 });
      writeFileSync(join(d, 'app.conf'), 'port = 1\n');
    });
    gnuTar(['czf', out, '-C', dir, '.']);
  }
  return out;
};

const cases: Case[] = [
  {
    name: 'a symbolic link (GNU tar)', kind: 'link-entry',
    make: () => {
      const dir = tree('symlink', (d) => {
        writeFileSync(join(d, 'a'), 'a');
        symlinkSync('/etc/passwd', join(d, 'passwd'));
      });
      gnuTar(['czf', at('symlink.tgz'), '-C', dir, '.']);
      return at('symlink.tgz');
    },
  },
  { name: 'a hard link to a file outside (tarfile)', kind: 'link-entry', make: () => (pyTar(at('hard.tgz'), [{ name: 'a', data: 'a' }, { name: 'h', type: 'hardlink', linkname: '../outside/secret' }]), at('hard.tgz')) },
  { name: 'a character device (tarfile)', kind: 'special-entry', make: () => (pyTar(at('chr.tgz'), [{ name: 'null', type: 'chr' }]), at('chr.tgz')) },
  { name: 'a block device (tarfile)', kind: 'special-entry', make: () => (pyTar(at('blk.tar'), [{ name: 'sda', type: 'blk' }], { gzip: false }), at('blk.tar')) },
  {
    name: 'a fifo (GNU tar)', kind: 'special-entry',
    make: () => {
      const dir = tree('fifo', (d) => spawnSync('mkfifo', [join(d, 'pipe')]));
      gnuTar(['czf', at('fifo.tgz'), '-C', dir, '.']);
      return at('fifo.tgz');
    },
  },
  {
    name: 'a set-uid file (GNU tar)', kind: 'special-bits',
    make: () => {
      const dir = tree('suid', (d) => {
        writeFileSync(join(d, 'su'), 'x');
        chmodSync(join(d, 'su'), 0o4755);
      });
      gnuTar(['czf', at('suid.tgz'), '-C', dir, '.']);
      return at('suid.tgz');
    },
  },
  { name: 'a set-gid directory (tarfile)', kind: 'special-bits', make: () => (pyTar(at('sgid.tgz'), [{ name: 'shared', type: 'dir', mode: 0o2775 }]), at('sgid.tgz')) },
  { name: 'a sticky directory (tarfile)', kind: 'special-bits', make: () => (pyTar(at('sticky.tgz'), [{ name: 'tmp', type: 'dir', mode: 0o1777 }]), at('sticky.tgz')) },
  { name: 'an absolute path (tarfile)', kind: 'not-local', make: () => (pyTar(at('abs.tgz'), [{ name: '/etc/evil', data: 'x' }]), at('abs.tgz')) },
  { name: "a '..' component (tarfile)", kind: 'not-local', make: () => (pyTar(at('dotdot.tgz'), [{ name: 'a/../../outside/evil', data: 'x' }]), at('dotdot.tgz')) },
  { name: "a '..' hidden in a pax long name (tarfile, pax)", kind: 'not-local', make: () => (pyTar(at('pax.tgz'), [{ name: `${'p'.repeat(120)}/../../../outside/evil`, data: 'x' }], { format: 'pax' }), at('pax.tgz')) },
  { name: "a '..' hidden in a GNU long name (tarfile, gnu)", kind: 'not-local', make: () => (pyTar(at('longname.tgz'), [{ name: `${'g'.repeat(150)}/../../../outside/evil`, data: 'x' }], { format: 'gnu' }), at('longname.tgz')) },
  { name: 'a name that is not normal (tarfile)', kind: 'not-local', make: () => (pyTar(at('notnormal.tgz'), [{ name: 'a//b', data: 'x' }]), at('notnormal.tgz')) },
  { name: 'the same name twice (tarfile)', kind: 'duplicate-entry', make: () => (pyTar(at('twice.tgz'), [{ name: 'a', data: 'one' }, { name: 'a', data: 'two' }]), at('twice.tgz')) },
  {
    name: 'an archive over the size limit (GNU tar)', kind: 'too-large', limits: { maxBytes: 1024 * 1024 },
    make: () => {
      const dir = tree('big', (d) => writeFileSync(join(d, 'big'), Buffer.alloc(2 * 1024 * 1024, 7)));
      gnuTar(['czf', at('big.tgz'), '-C', dir, '.']);
      return at('big.tgz');
    },
  },
  {
    name: 'a gzip bomb: 256 MiB of zeros in a few hundred KiB (GNU tar)', kind: 'too-large', limits: { maxBytes: 1024 * 1024 },
    make: () => {
      const dir = tree('bomb', (d) => {
        writeFileSync(join(d, 'zeros'), '');
        truncateSync(join(d, 'zeros'), 256 * 1024 * 1024);
      });
      gnuTar(['czf', at('bomb.tgz'), '-C', dir, '.']);
      rmSync(dir, { recursive: true });
      return at('bomb.tgz');
    },
  },
  {
    name: 'a truncated gzip', kind: 'corrupt',
    make: () => {
      const whole = readFileSync(good());
      writeFileSync(at('truncated.tgz'), whole.subarray(0, Math.floor(whole.length / 2)));
      return at('truncated.tgz');
    },
  },
  {
    name: 'a truncated tar', kind: 'corrupt',
    make: () => {
      const dir = tree('plain', (d) => writeFileSync(join(d, 'f'), Buffer.alloc(5000, 1)));
      gnuTar(['cf', at('plain.tar'), '-C', dir, '.']);
      writeFileSync(at('truncated.tar'), readFileSync(at('plain.tar')).subarray(0, 3000));
      return at('truncated.tar');
    },
  },
  {
    name: 'a header whose checksum is wrong', kind: 'corrupt',
    make: () => {
      const dir = tree('flip', (d) => writeFileSync(join(d, 'f'), 'content'));
      gnuTar(['cf', at('flip.tar'), '-C', dir, './f']);
      const bytes = readFileSync(at('flip.tar'));
      bytes[100] = bytes[100]! ^ 0x04; // a mode digit: the header's checksum no longer holds
      writeFileSync(at('flipped.tar'), bytes);
      return at('flipped.tar');
    },
  },
  { name: 'not an archive at all', kind: 'corrupt', make: () => (writeFileSync(at('garbage.tgz'), 'this is not a tar file'.repeat(40)), at('garbage.tgz')) },
  { name: 'a digest mismatch', kind: 'digest-mismatch', make: good, sha256: 'f'.repeat(64) },
  {
    name: 'a symbolic link planted at the target', kind: 'in-the-way', make: good,
    plant: (host, outside) => symlinkSync(outside, join(host.root, 'opt/app')),
  },
  {
    name: 'a symbolic link planted inside the target', kind: 'in-the-way', make: good,
    plant: (host, outside) => {
      mkdirSync(join(host.root, 'opt/app'));
      symlinkSync(outside, join(host.root, 'opt/app/bin'));
    },
  },
];

/** What is in the state directory, but for the store and the outbox (the failure's record and report). */
function stateListing(stateDir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(join(stateDir, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${name.name}` : name.name;
      if (path === 'state.json' || /^records\.\d+\.jsonl$/.test(path) || path.startsWith('outbox')) continue;
      out.push(name.isDirectory() ? `${path}/` : `${path} ${readFileSync(join(stateDir, path)).length}`);
      if (name.isDirectory()) walk(path);
    }
  };
  if (existsSync(stateDir)) walk('');
  return out.sort();
}

const files = new Map<string, string>();
beforeAll(() => {
  for (const c of cases) files.set(c.name, c.make());
}, 300_000);

describe.each(['inline', 'object'] as const)('a hostile archive from an %s source is refused whole, nothing written', (source) => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const host = testHost({ kinds: {}, dirs: ['etc', 'opt'] });
    try {
      const outside = join(dirname(host.root), 'outside');
      mkdirSync(outside);
      writeFileSync(join(outside, 'secret'), 'kept');
      c.plant?.(host, outside);
      const file = files.get(c.name)!;
      const sha256 = c.sha256 ?? sha256Of(file);
      let resource: Resource;
      if (source === 'inline') {
        const bytes = readFileSync(file);
        if (bytes.length * 1.4 > 256 * 1024) return; // too big to ride inline: the object case covers it
        resource = { ...inlineArchive('app', '/opt/app', file), sha256 };
      } else {
        host.kinds({ archiveObjects: () => async () => memoryObjects(new Map([['app.tgz', readFileSync(file)]])) });
        resource = { type: 'archive', id: 'app', path: '/opt/app', sha256, source: { object: 'app.tgz' } };
      }
      if (c.limits) host.kinds({ archiveLimits: c.limits });
      // The store exists before, so that only its content may change.
      await host.apply(declaration([]));
      const before = { root: hashTree(host.root), outside: hashTree(outside), state: stateListing(host.stateDir) };

      const result = await host.apply(declaration([resource]));
      const said = result.kind === 'refused' ? [result.reason, ...result.details].join('\n') : result.kind === 'applied' ? JSON.stringify(result.report.steps) : '';
      expect(result.kind === 'refused' || (result.kind === 'applied' && result.report.outcome === 'failed'), said).toBe(true);
      expect(said).toContain('/opt/app');

      expect(hashTree(host.root)).toEqual(before.root);
      expect(hashTree(outside)).toEqual(before.outside);
      expect(stateListing(host.stateDir)).toEqual(before.state);
    } finally {
      host.cleanup();
    }
  });
});

describe('the reader names each refusal by its kind', () => {
  it.each(cases.filter((c) => !c.plant && !c.sha256).map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    await expect(readArchive({ kind: 'file', path: files.get(c.name)! }, { ...DEFAULT_ARCHIVE_LIMITS, ...c.limits })).rejects.toMatchObject({ name: 'ArchiveRefused', kind: c.kind });
  });
});
