import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Objm } from '@nats-io/obj';
import { jetstream } from '@nats-io/jetstream';
import { ARCHIVES_BUCKET } from '../../src/link/wire.js';
import { journalPath, readJournal } from '../../src/kinds/archive/journal.js';
import { NatsServer } from '../support/nats.js';
import { control, enrolledHost, type HostFixture } from '../support/daemon.js';
import { runCli } from '../support/cli.js';
import { hashTree, scratch } from '../support/tree.js';
import { gnuTar, sha256Of } from '../support/archives.js';

/**
 * The archive store against a real nats-server: meshctl put-archive uploads, a delivery names the
 * object, the daemon fetches it over its own link, verifies and unpacks it; a new archive replaces the
 * old entries; removal takes entries and journal off; a missing or corrupted object is refused.
 */
let server: NatsServer;
let host: HostFixture;
const work = scratch('mesh-host-objects-');
let made = 0;

function archive(files: Record<string, string>, modes: Record<string, number> = {}): string {
  const dir = join(work.dir, `src-${++made}`);
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), content);
    chmodSync(join(dir, name), modes[name] ?? 0o644);
  }
  const out = join(work.dir, `release-${made}.tgz`);
  gnuTar(['czf', out, '-C', dir, '.']);
  return out;
}

async function putArchive(file: string, name: string): Promise<{ name: string; sha256: string; resource: { sha256: string; source: { object: string } } }> {
  const result = await runCli('meshctl', ['put-archive', file, '--name', name, '--server', server.url, '--json']);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as never;
}

const release = (sha256: string, object: string) => ({ type: 'archive' as const, id: 'release', path: '/srv/release', sha256, source: { object } });
const tree = () => Object.keys(hashTree(join(host.root, 'srv/release'))).sort();

beforeAll(async () => {
  server = await NatsServer.start();
  host = await enrolledHost([server.url], { resources: [{ type: 'directory', id: 'srv-app', path: '/srv/app' }] });
  await host.start();
}, 240_000);

afterAll(async () => {
  await host?.cleanup();
  await server?.stop();
  work.cleanup();
});

describe('archives in the mesh_archives object store', () => {
  let sequence = 1;
  /** Puts a declaration and waits for the report of its apply (the report names its sequence). */
  const deliver = async (resources: object[]) => {
    const mine = ++sequence;
    await host.put({ epoch: 1, sequence: mine, resources });
    const started = Date.now();
    for (;;) {
      const report = (await host.reports()).find((r) => r.declaration?.sequence === mine);
      if (report) return report;
      if (Date.now() - started > 60_000) throw new Error(`no report of sequence ${mine}:\n${host.log().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  it('put-archive uploads and prints the resource; a delivery naming it is fetched, verified and unpacked', async () => {
    const v1 = archive({ 'bin/server': '#!/bin/sh\necho v1\n', 'old.txt': 'old' }, { 'bin/server': 0o755 });
    const put = await putArchive(v1, 'server-1.tgz');
    expect(put).toMatchObject({ name: 'server-1.tgz', sha256: sha256Of(v1), resource: { type: 'archive', sha256: sha256Of(v1), source: { object: 'server-1.tgz' } } });
    const report = await deliver([release(put.sha256, 'server-1.tgz')]);
    expect(report.outcome, JSON.stringify(report)).toBe('converged');
    expect(tree()).toEqual(['.', 'bin', 'bin/server', 'old.txt']);
    expect(readFileSync(join(host.root, 'srv/release/bin/server'), 'utf8')).toBe('#!/bin/sh\necho v1\n');
    expect(readJournal(host.state, '/srv/release')).toMatchObject({ sha256: put.sha256, complete: true });
    expect(readdirSync(join(host.state, 'archives'))).toEqual([put.sha256]);
  });

  it('a re-delivery with a new archive removes the old entries it lacks', async () => {
    const v2 = archive({ 'bin/server': '#!/bin/sh\necho v2\n', 'new.txt': 'new' }, { 'bin/server': 0o755 });
    const put = await putArchive(v2, 'server-2.tgz');
    const report = await deliver([release(put.sha256, 'server-2.tgz')]);
    expect(report.outcome, JSON.stringify(report)).toBe('converged');
    expect(tree()).toEqual(['.', 'bin', 'bin/server', 'new.txt']);
    expect(readFileSync(join(host.root, 'srv/release/bin/server'), 'utf8')).toBe('#!/bin/sh\necho v2\n');
    expect(readdirSync(join(host.state, 'archives'))).toEqual([put.sha256]); // the old one is no longer kept
  });

  it('meshctl send refuses a declaration whose archive object is missing or differs', async () => {
    const declFile = join(work.dir, 'send.json');
    const key = join(work.dir, 'send.nk');
    writeFileSync(key, host.seed);
    const send = (resources: object[]) => {
      writeFileSync(declFile, JSON.stringify({ version: 1, node: host.node, mode: 'converged', epoch: 1, resources }));
      return runCli('meshctl', ['send', host.node, declFile, '--key', key, '--server', server.url]);
    };
    const missing = await send([release('a'.repeat(64), 'nowhere.tgz')]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain(`/resources/0 (archive 'release'): object 'nowhere.tgz' is not in ${ARCHIVES_BUCKET}`);
    const differs = await send([release('b'.repeat(64), 'server-2.tgz')]);
    expect(differs.code).toBe(3);
    expect(differs.stderr).toContain(`the declaration says sha256 ${'b'.repeat(64)}, the stored object 'server-2.tgz' has`);
  });

  it('a missing object fails the resource, naming it, and leaves the unpacked archive as it was', async () => {
    const before = hashTree(join(host.root, 'srv/release'));
    const report = await deliver([release('c'.repeat(64), 'gone.tgz')]);
    expect(report.outcome).toBe('failed');
    expect(report.error?.message).toBe("object 'gone.tgz' is not in the archive store");
    expect(hashTree(join(host.root, 'srv/release'))).toEqual(before);
  });

  it('a corrupted object is refused: the store\'s own digest check and the declared sha256 both stand guard', async () => {
    const v3 = archive({ 'bin/server': 'v3' });
    const put = await putArchive(v3, 'server-3.tgz');
    // Corrupt it in the server: one more chunk under the object's id.
    const nc = await control([server.url]);
    try {
      const info = await (await new Objm(nc).open(ARCHIVES_BUCKET)).info('server-3.tgz');
      await jetstream(nc).publish(`$O.${ARCHIVES_BUCKET}.C.${info!.nuid}`, new TextEncoder().encode('garbage'));
    } finally {
      await nc.close();
    }
    const before = hashTree(join(host.root, 'srv/release'));
    const report = await deliver([release(put.sha256, 'server-3.tgz')]);
    expect(report.outcome).toBe('failed');
    expect(report.error?.message).toMatch(/object 'server-3\.tgz' could not be fetched whole: .*corrupt.*nothing was unpacked|has sha256 [0-9a-f]{64}, but the declaration says/);
    expect(hashTree(join(host.root, 'srv/release'))).toEqual(before);
    expect(readdirSync(join(host.state, 'archives')).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('removal takes the entries, the target and the journal off', async () => {
    const report = await deliver([{ type: 'directory', id: 'srv-app', path: '/srv/app' }]);
    expect(report.outcome, JSON.stringify(report)).toBe('converged');
    expect(existsSync(join(host.root, 'srv/release'))).toBe(false);
    expect(existsSync(journalPath(host.state, '/srv/release'))).toBe(false);
    expect(existsSync(join(host.state, 'archives'))).toBe(false);
  });

  it("genesis fetches an archive of its bundle over the bundle's link (the configuration has none yet)", async () => {
    const file = archive({ 'bin/tool': 'tool' }, { 'bin/tool': 0o755 });
    const put = await putArchive(file, 'genesis.tgz');
    const enrolled = await enrolledHost([server.url], { resources: [release(put.sha256, 'genesis.tgz')] });
    try {
      expect(readFileSync(join(enrolled.root, 'srv/release/bin/tool'), 'utf8')).toBe('tool');
      expect(readJournal(enrolled.state, '/srv/release')).toMatchObject({ sha256: put.sha256, complete: true });
    } finally {
      await enrolled.cleanup();
    }
  });
});
