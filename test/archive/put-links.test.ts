import { lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ARCHIVE_LIMITS } from '../../src/core/config/archive-limits.js';
import { ArchiveRefused } from '../../src/kinds/archive/refusal.js';
import { readArchive } from '../../src/kinds/archive/archive-read.js';
import { projectDir, runCli } from '../support/cli.js';
import { readJournal } from '../../src/kinds/archive/journal.js';
import { inlineArchive, pyTar } from '../support/archives.js';
import { LINK_CORPUS, LONG_LINK, longLinkArchive } from '../support/link-corpus.js';
import { NatsServer } from '../support/nats.js';

/**
 * `meshctl put-archive` answers as the host will, for every archive of the link corpus: it uploads
 * (to a real nats-server) exactly those the host unpacks and refuses the others with the host's own
 * words and kind; and a refusal naming a 1,210-character link text shows it cut, in one short line,
 * while `--json` (put-archive's and `mesh-host apply`'s) carries it whole. A hard link across two file
 * systems (a tmpfs mounted in a private mount namespace) is refused by the kernel: a copy is made
 * instead, said and journaled.
 */
const work = mkdtempSync(join(tmpdir(), 'mesh-host-put-links-'));
let server: NatsServer;
const files = new Map<string, string>();
beforeAll(async () => {
  server = await NatsServer.start();
  for (const [i, c] of LINK_CORPUS.entries()) {
    const out = join(work, `case-${i}.tar`);
    c.build(out, mkdtempSync(join(work, 'tree-')));
    files.set(c.name, out);
  }
  longLinkArchive(join(work, 'long.tar'));
}, 120_000);
afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** What the host's reader says of an archive: accepted, or its refusal's kind and message. */
async function hostSays(file: string): Promise<{ accepted: true } | { kind: string; message: string }> {
  try {
    await readArchive({ kind: 'file', path: file }, DEFAULT_ARCHIVE_LIMITS);
    return { accepted: true };
  } catch (err) {
    if (!(err instanceof ArchiveRefused)) throw err;
    return { kind: err.kind, message: err.message };
  }
}

describe('meshctl put-archive reads an archive with links as the host will', () => {
  it.each(LINK_CORPUS.map((c, i) => [c.name, c, i] as const))('%s', async (_name, c, i) => {
    const file = files.get(c.name)!;
    const host = await hostSays(file);
    expect('accepted' in host).toBe(c.tree !== undefined); // the corpus and the host agree first
    const put = await runCli('meshctl', ['put-archive', file, '--name', `links-${i}.tar`, '--server', server.url, '--json'], { timeoutMs: 60_000 });
    if ('accepted' in host) {
      expect(put.code, put.stderr).toBe(0);
      expect(JSON.parse(put.stdout)).toMatchObject({ name: `links-${i}.tar`, bucket: 'mesh_archives' });
    } else {
      expect(put.code, put.stderr).toBe(3);
      expect(put.stderr).toContain(host.message);
      expect(put.stderr).toContain('nothing was uploaded');
      expect(JSON.parse(put.stdout).error.subjects).toEqual([expect.objectContaining({ kind: host.kind })]);
    }
  });
});

describe('a refusal reads well and its JSON keeps the whole value', () => {
  it('the reader cuts a 1,210-character link text in the middle and says its length; the refusal carries it whole', async () => {
    const err = await readArchive({ kind: 'file', path: join(work, 'long.tar') }, DEFAULT_ARCHIVE_LIMITS).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArchiveRefused);
    const refusal = err as ArchiveRefused;
    expect(refusal.subject).toEqual({ kind: 'link-entry', entry: 'deep', link: LONG_LINK });
    expect(refusal.message).toContain(`'${LONG_LINK.slice(0, 100)}…${LONG_LINK.slice(-100)}' (${LONG_LINK.length} characters)`);
    expect(refusal.message.length).toBeLessThan(500);
  });

  it('put-archive prints one short line, and its --json the whole link text', async () => {
    const put = await runCli('meshctl', ['put-archive', join(work, 'long.tar'), '--server', server.url, '--json'], { timeoutMs: 60_000 });
    expect(put.code, put.stderr).toBe(3);
    expect(put.stderr.trim().split('\n')).toHaveLength(1);
    expect(put.stderr.length).toBeLessThan(800);
    expect(put.stderr).toContain(`(${LONG_LINK.length} characters)`);
    expect(JSON.parse(put.stdout).error.subjects).toEqual([{ kind: 'link-entry', entry: 'deep', link: LONG_LINK }]);
  });

  it('mesh-host apply refuses the plan in a short line, and its --json names the resource and the whole link text', async () => {
    const root = join(work, 'apply/root');
    mkdirSync(join(root, 'opt'), { recursive: true });
    const decl = join(work, 'apply/decl.json');
    writeFileSync(decl, JSON.stringify({ version: 1, node: 'links', mode: 'converged', sequence: 1, resources: [inlineArchive('app', '/opt/app', join(work, 'long.tar'))] }));
    writeFileSync(join(work, 'apply/host.json'), JSON.stringify({ node: 'links' }));
    const applied = await runCli('mesh-host', ['apply', decl, '--json', '--root', root, '--state-dir', join(work, 'apply/state'), '--config', join(work, 'apply/host.json')], { timeoutMs: 60_000 });
    expect(applied.code, applied.stderr).toBe(3);
    expect(applied.stderr).toContain(`(${LONG_LINK.length} characters)`);
    expect(applied.stderr).not.toContain(LONG_LINK);
    const json = JSON.parse(applied.stdout.slice(applied.stdout.lastIndexOf('\n{\n  "error"') + 1)) as { error: { subjects: unknown[] } };
    expect(json.error.subjects).toEqual([{ resource: 'app', kind: 'link-entry', entry: 'deep', link: LONG_LINK }]);
  });
});

describe('a hard link the file system refuses', () => {
  it('is made as a copy, said in the report and journaled as one; the next apply keeps the copy', async () => {
    // x/a on the scratch disk, y/ a tmpfs mounted in a private mount namespace: link(2) between them is EXDEV.
    const dir = join(work, 'nolink');
    mkdirSync(join(dir, 'root/opt/app/y'), { recursive: true });
    const file = join(dir, 'across.tar');
    pyTar(file, [{ name: 'x/a', data: 'shared' }, { name: 'y/b', type: 'hardlink', linkname: 'x/a' }], { gzip: false });
    const decl = join(dir, 'decl.json');
    writeFileSync(decl, JSON.stringify({ version: 1, node: 'links', mode: 'converged', sequence: 1, resources: [inlineArchive('app', '/opt/app', file)] }));
    writeFileSync(join(dir, 'host.json'), JSON.stringify({ node: 'links' }));
    const apply = `${process.execPath} ${join(projectDir, 'bin/mesh-host')} apply ${decl} --json --root ${dir}/root --state-dir ${dir}/state --config ${dir}/host.json`;
    const script = [
      'set -e', 'mount --make-rprivate /', `mount -t tmpfs tmpfs ${dir}/root/opt/app/y`,
      `${apply} > ${dir}/first.json`, `stat -c '%i %h' ${dir}/root/opt/app/y/b > ${dir}/first.ino`, `cat ${dir}/root/opt/app/y/b > ${dir}/first.content`,
      `${apply} > ${dir}/again.json`, `stat -c '%i %h' ${dir}/root/opt/app/y/b > ${dir}/again.ino`,
    ].join('\n');
    const run = spawnSync('unshare', ['-m', 'sh', '-c', script], { encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    const reportIn = (name: string) => {
      const out = readFileSync(join(dir, name), 'utf8');
      return JSON.parse(out.slice(out.indexOf('\n{') + 1)).report as { outcome: string; steps: Array<{ status: string; detail?: string }> };
    };
    const first = reportIn('first.json');
    expect(first.outcome).toBe('converged');
    expect(first.steps[0]!.detail).toContain('/opt/app/y/b: a copy, not a hard link (the file system refused one)');
    expect(readFileSync(join(dir, 'first.content'), 'utf8')).toBe('shared');
    expect(lstatSync(join(dir, 'root/opt/app/x/a')).nlink).toBe(1);
    expect(readJournal(join(dir, 'state'), '/opt/app')!.entries.find((e) => e.name === 'y/b')).toMatchObject({ type: 'hardlink', link: 'x/a', copied: true });
    expect(reportIn('again.json').steps.every((s) => s.status === 'unchanged')).toBe(true);
    expect(readFileSync(join(dir, 'again.ino'), 'utf8')).toBe(readFileSync(join(dir, 'first.ino'), 'utf8')); // the intact copy is not made again
  });
});
