import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, type InitMesh } from '../support/mesh-init.js';
import { runCli } from '../support/cli.js';
import { scratch } from '../support/tree.js';
import { placeServers } from '../../src/control/setup/server-conf.js';

const unavailable = natsUnavailable();

/** Every file under a folder, with its mode. */
function modes(dir: string, rel = ''): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of readdirSync(join(dir, rel))) {
    const path = rel ? `${rel}/${name}` : name;
    const st = statSync(join(dir, path));
    if (st.isDirectory()) Object.assign(out, modes(dir, path));
    else out[path] = st.mode & 0o777;
  }
  return out;
}

describe('where the servers of meshctl init listen', () => {
  const store = (name: string) => `/s/${name}`;
  it('one host for a cluster counts its ports up; one host a server keeps the ports; a mismatch is said', () => {
    expect(placeServers({ count: 3, hosts: ['127.0.0.1'], ports: [], clusterPorts: [], storeDir: store, resolverDir: (name: string) => `/j/${name}` }).valueOf()).toEqual([
      { name: 'mesh-1', host: '127.0.0.1', port: 4222, clusterPort: 6222, leafPort: 7422, storeDir: '/s/mesh-1', resolverDir: '/j/mesh-1' },
      { name: 'mesh-2', host: '127.0.0.1', port: 4223, clusterPort: 6223, leafPort: 7423, storeDir: '/s/mesh-2', resolverDir: '/j/mesh-2' },
      { name: 'mesh-3', host: '127.0.0.1', port: 4224, clusterPort: 6224, leafPort: 7424, storeDir: '/s/mesh-3', resolverDir: '/j/mesh-3' },
    ]);
    expect(placeServers({ count: 2, hosts: ['10.0.0.1', '10.0.0.2'], ports: [], clusterPorts: [], storeDir: store, resolverDir: (name: string) => `/j/${name}` })).toMatchObject([{ host: '10.0.0.1', port: 4222, clusterPort: 6222 }, { host: '10.0.0.2', port: 4222, clusterPort: 6222 }]);
    expect(placeServers({ count: 1, hosts: ['127.0.0.1'], ports: [], clusterPorts: [], storeDir: store, resolverDir: (name: string) => `/j/${name}` })).toEqual([{ name: 'mesh', host: '127.0.0.1', port: 4222, leafPort: 7422, storeDir: '/s/mesh', resolverDir: '/j/mesh' }]);
    expect(placeServers({ count: 3, hosts: ['a', 'b'], ports: [], clusterPorts: [], storeDir: store, resolverDir: (name: string) => `/j/${name}` })).toMatch(/2 hosts for 3 servers/);
    expect(placeServers({ count: 3, hosts: ['a'], ports: [1, 2], clusterPorts: [], storeDir: store, resolverDir: (name: string) => `/j/${name}` })).toMatch(/2 ports for 3 servers/);
  });

  it('a host count that does not fit, or a bad port, is a usage error and writes nothing', async () => {
    const s = scratch();
    try {
      const wrong = await runCli('meshctl', ['init', join(s.dir, 'm'), '--servers', '3', '--host', 'a', '--host', 'b']);
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toMatch(/2 hosts for 3 servers/);
      const port = await runCli('meshctl', ['init', join(s.dir, 'm'), '--port', '99999']);
      expect(port.code).toBe(2);
      expect(port.stderr).toMatch(/--port 99999: a port/);
      expect(existsSync(join(s.dir, 'm'))).toBe(false);
      const keep = await runCli('meshctl', ['init', join(s.dir, 'm'), '--keep-history', 'a while']);
      expect(keep.code).toBe(2);
      expect(keep.stderr).toMatch(/--keep-history a while: how long the mesh keeps each declaration, as 90d, 12w, 36h or forever/);
      expect(existsSync(join(s.dir, 'm'))).toBe(false);
    } finally {
      s.cleanup();
    }
  });

  it('--keep-history is written into mesh.json, for the history the mesh makes', async () => {
    const s = scratch();
    try {
      const made = await runCli('meshctl', ['init', join(s.dir, 'm'), '--keep-history', '90d', '--log-level', 'warn']);
      expect(made.code, made.stderr).toBe(0);
      expect(JSON.parse(readFileSync(join(s.dir, 'm/mesh.json'), 'utf8'))).toMatchObject({ keepHistory: '90d' });
    } finally {
      s.cleanup();
    }
  });
});

describe.skipIf(unavailable !== undefined && !process.env.CI)(`meshctl init against real nats-servers in operator mode${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  describe.each([1, 3])('%i server(s)', (count) => {
    let mesh: InitMesh;
    beforeAll(async () => {
      mesh = await initMesh({ servers: count });
    }, 60_000);
    afterAll(async () => {
      await mesh?.close();
    });

    it('writes the secrets 0600 and the rest 0644, a configuration a server, and refuses to write over it', async () => {
      const files = modes(mesh.dir);
      for (const secret of ['operator.nk', 'meshctl.creds', 'nats/operator.nk', 'nats/account.nk', 'nats/account-signing.nk', 'nats/system.nk', 'nats/system.creds']) expect(files[secret], secret).toBe(0o600);
      for (const open of ['operator.pub', 'mesh.json', 'nats/operator.jwt', 'nats/account.jwt', 'nats/system.jwt']) expect(files[open], open).toBe(0o644);
      const confs = Object.keys(files).filter((f) => /^nats-server.*\.conf$/.test(f));
      expect(confs).toHaveLength(count);
      const conf = readFileSync(join(mesh.dir, confs[0]!), 'utf8');
      expect(conf).toMatch(/resolver: \{\n {2}type: full/);
      expect(conf).toMatch(/jetstream \{/);
      expect(/routes: \[/.test(conf)).toBe(count > 1);
      const before = readFileSync(join(mesh.dir, 'mesh.json'), 'utf8');
      const again = await runCli('meshctl', ['init', mesh.dir]);
      expect(again.code).toBe(3);
      expect(again.stderr).toMatch(/is not empty; a mesh directory is never written over/);
      expect(readFileSync(join(mesh.dir, 'mesh.json'), 'utf8')).toBe(before);
    });

    it('the servers admit no client without credentials: meshctl without the mesh directory is refused', async () => {
      const bare = await runCli('meshctl', ['status', '--server', mesh.servers[0]!.url]);
      expect(bare.code).toBe(3);
      expect(bare.stderr).toMatch(/authori[sz]ation/i);
    });

    it('a host enrolled with the mesh directory alone (node-key, node-creds, bundle without --server, --creds or --key) applies a send, and its reports verify', async () => {
      const host = await mesh.enrol(`init-${count}`);
      const next = join(mesh.dir, '..', `next-${count}.json`);
      writeFileSync(next, JSON.stringify({ version: 1, node: host.node, mode: 'converged', resources: [{ type: 'directory', id: 'app', path: '/srv/app' }] }));
      const sent = await mesh.meshctl(['send', host.node, next]);
      expect(sent.code, sent.stderr).toBe(0);
      const started = Date.now();
      while (!existsSync(join(host.root, 'srv/app'))) {
        if (Date.now() - started > 30_000) throw new Error(`the send was not applied:\n${host.log()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      let reports: { sequence: number; trust: { verdict: string } }[] = [];
      while (reports.length < 2) {
        if (Date.now() - started > 30_000) throw new Error(`two reports did not come:\n${host.log()}`);
        const read = await mesh.meshctl(['reports', '--node', host.node, '--json']);
        reports = read.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as (typeof reports)[number]);
      }
      expect(reports.map((r) => [r.sequence, r.trust.verdict])).toEqual([[1, 'verified'], [2, 'verified']]);
    }, 120_000);
  });
});
