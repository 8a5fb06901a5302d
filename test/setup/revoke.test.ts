import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, credsAuthenticator } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, type InitHost, type InitMesh } from '../support/mesh-init.js';
import { CARRIED_CREDS } from '../../src/host/env/host-paths.js';
import { DECLARATIONS_BUCKET, ENROLMENTS_BUCKET } from '../../src/link/wire.js';
import { decodeAccountJwt } from '../../src/control/setup/account-claims.js';
import { userOfCreds } from '../../src/control/setup/nats-accounts.js';
import { refusedAfterRevocation, waitFor } from '../support/revocation.js';

const unavailable = natsUnavailable();

describe.skipIf(unavailable !== undefined && !process.env.CI)(`revoking a host's credentials, against real nats-servers with the full account resolver${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  describe.each([1, 3])('%i server(s), made by meshctl init', (count) => {
    let mesh: InitMesh;
    let removed: InitHost;
    let rotated: InitHost;
    let kept: InitHost;
    let late: InitHost;
    const hosts = () => [removed, rotated, kept, late].filter(Boolean);

    beforeAll(async () => {
      mesh = await initMesh({ servers: count });
      removed = await mesh.enrol('gone');
      rotated = await mesh.enrol('rotated');
      kept = await mesh.enrol('kept');
      late = await mesh.enrol('late', { start: false });
    }, 120_000);
    afterAll(async () => {
      await mesh?.close();
    });

    it("writes the full resolver into every server's configuration, and meshctl's system user beside the mesh", () => {
      const confs = count === 1 ? ['nats-server.conf'] : [1, 2, 3].map((i) => `nats-server-${i}.conf`);
      for (const conf of confs) {
        const text = readFileSync(join(mesh.dir, conf), 'utf8');
        expect(text).toMatch(/resolver: \{\n {2}type: full\n {2}dir: ".*\/jwt\/mesh(-\d)?"\n {2}allow_delete: false/);
        expect(text).not.toMatch(/resolver: MEMORY/);
      }
      const file = JSON.parse(readFileSync(join(mesh.dir, 'mesh.json'), 'utf8')) as { serverNames: string[]; systemCreds: string };
      expect(file.serverNames).toEqual(count === 1 ? ['mesh'] : ['mesh-1', 'mesh-2', 'mesh-3']);
      expect(file.systemCreds).toBe('nats/system.creds');
    });

    it('refuses, changing nothing, a node it issued nothing to, a user key that is not one, and a rotation without --out', async () => {
      const before = readFileSync(join(mesh.dir, 'nats/account.jwt'), 'utf8');
      const nobody = await mesh.meshctl(['node-remove', 'nobody']);
      expect(nobody.code).toBe(3);
      expect(nobody.stderr).toMatch(/records no credentials issued to nobody.*nothing was changed/);
      const bad = await mesh.meshctl(['node-remove', 'nobody', '--user', 'NOTAUSER']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--user NOTAUSER is not a user public key/);
      const noOut = await mesh.meshctl(['node-creds', kept.node, '--rotate']);
      expect(noOut.code).toBe(2);
      expect(readFileSync(join(mesh.dir, 'nats/account.jwt'), 'utf8')).toBe(before);
    });

    it('node-remove revokes the host on every server within seconds: its open connections are closed, a new one refused; its slot and key are gone and the fleet says it was removed', async () => {
      const user = userOfCreds(readFileSync(removed.creds, 'utf8'))!;
      // One connection with the host's credentials on each server: each must be closed by its own server.
      const watched = await Promise.all(mesh.servers.map((s) => refusedAfterRevocation(s.url, removed.creds)));
      const out = await mesh.meshctl(['node-remove', removed.node]);
      expect(out.code, out.stderr + out.stdout).toBe(0);
      for (const name of count === 1 ? ['mesh'] : ['mesh-1', 'mesh-2', 'mesh-3']) expect(out.stdout).toMatch(new RegExp(`^ {2}${name} +took it$`, 'm'));
      // The event itself: each server closes the connection with its reason, then refuses it again.
      for (const w of watched) expect(await w.closed).toMatch(/revoked|authorization/i);
      await waitFor(`the daemon of ${removed.node} told it was refused`, () => /link: the server said an error/.test(removed.log()) && /revoked|authorization/i.test(removed.log()), hosts());
      for (const s of mesh.servers) await expect(connect({ servers: s.url, authenticator: credsAuthenticator(readFileSync(removed.creds)), reconnect: false })).rejects.toThrow(/authorization/i);

      const claims = await decodeAccountJwt(readFileSync(join(mesh.dir, 'nats/account.jwt'), 'utf8'));
      expect(typeof claims !== 'string' && claims.nats.revocations?.[user]).toBeGreaterThan(0);
      const nc = await connect({ servers: mesh.servers[0]!.url, authenticator: credsAuthenticator(readFileSync(join(mesh.dir, 'meshctl.creds'))) });
      try {
        const slot = await (await new Kvm(nc).open(DECLARATIONS_BUCKET)).get(removed.node);
        expect(slot?.operation).toBe('DEL');
        const enrolment = (await (await new Kvm(nc).open(ENROLMENTS_BUCKET)).get(removed.node))!.json<{ key?: string; removed?: { users: string[] } }>();
        expect(enrolment.key).toBeUndefined();
        expect(enrolment.removed?.users).toEqual([user]);
      } finally {
        await nc.close();
      }
      const status = await mesh.meshctl(['status', '--json']);
      const rows = (JSON.parse(status.stdout) as { nodes: Array<{ node: string; state: string }> }).nodes;
      expect(rows.find((r) => r.node === removed.node)?.state).toBe('removed');
      expect(rows.find((r) => r.node === kept.node)?.state).not.toBe('removed');
      const text = await mesh.meshctl(['status']);
      expect(text.stdout).toMatch(/removed from the mesh at .*: its credentials are revoked/);
    }, 120_000);

    it('node-creds --rotate: the new credentials connect (the running daemon takes them as it reconnects), the old are refused; the other hosts never notice', async () => {
      const newCreds = join(mesh.dir, '..', 'rotated-new.creds');
      const watched = await Promise.all(mesh.servers.map((s) => refusedAfterRevocation(s.url, rotated.creds)));
      const out = await mesh.meshctl(['node-creds', rotated.node, '--rotate', '--out', newCreds]);
      expect(out.code, out.stderr + out.stdout).toBe(0);
      expect(out.stdout).toMatch(/revoked, pushed to the servers/);
      for (const w of watched) expect(await w.closed).toMatch(/revoked|authorization/i);
      await expect(connect({ servers: mesh.servers[0]!.url, authenticator: credsAuthenticator(readFileSync(rotated.creds)), reconnect: false })).rejects.toThrow(/authorization/i);
      const fresh = await connect({ servers: mesh.servers.map((s) => s.url), authenticator: credsAuthenticator(readFileSync(newCreds)), reconnect: false });
      await fresh.close();
      // The operator puts the new file where the host's configuration names its credentials.
      const connectedBefore = rotated.log().split('link: reconnected').length;
      copyFileSync(newCreds, join(rotated.state, CARRIED_CREDS));
      await waitFor(`${rotated.node} reconnecting with its new credentials`, () => rotated.log().split('link: reconnected').length > connectedBefore, hosts());
      const status = await mesh.meshctl(['status', rotated.node, '--json']);
      expect(status.code, status.stderr).toBe(0);
      expect(kept.log()).not.toMatch(/link: disconnected/);
    }, 120_000);

    if (count === 1) {
      it('two revocations at once both hold: the account is changed by one meshctl at a time', async () => {
        const [a, b] = [await mesh.enrol('both-a', { start: false }), await mesh.enrol('both-b', { start: false })];
        const [ra, rb] = await Promise.all([mesh.meshctl(['node-remove', a.node]), mesh.meshctl(['node-remove', b.node])]);
        expect(ra.code, ra.stderr).toBe(0);
        expect(rb.code, rb.stderr).toBe(0);
        const claims = await decodeAccountJwt(readFileSync(join(mesh.dir, 'nats/account.jwt'), 'utf8'));
        if (typeof claims === 'string') throw new Error(claims);
        for (const host of [a, b]) expect(claims.nats.revocations?.[userOfCreds(readFileSync(host.creds, 'utf8'))!], host.node).toBeGreaterThan(0);
        for (const host of [a, b]) await expect(connect({ servers: mesh.servers[0]!.url, authenticator: credsAuthenticator(readFileSync(host.creds)), reconnect: false })).rejects.toThrow(/authorization/i);
      }, 120_000);
    }

    if (count === 3) {
      it('a member down during a revocation is named (exit 1); once back, account-push gives it the revocation and it refuses the user', async () => {
        const down = mesh.servers[2]!;
        await down.kill();
        const out = await mesh.meshctl(['node-remove', late.node]);
        expect(out.code, out.stderr + out.stdout).toBe(1);
        expect(out.stdout, out.stderr).toMatch(/^ {2}mesh-3 +did not answer within 5 s/m);
        expect(out.stdout).toMatch(/^ {2}mesh-1 +took it$/m);
        await down.run();
        const pushed = await mesh.meshctl(['account-push']);
        expect(pushed.code, pushed.stderr + pushed.stdout).toBe(0);
        expect(pushed.stdout).toMatch(/^ {2}mesh-3 +took it$/m);
        await expect(connect({ servers: down.url, authenticator: credsAuthenticator(readFileSync(late.creds)), reconnect: false })).rejects.toThrow(/authorization/i);
      }, 120_000);
    }

    it('a server restarted after a revocation still refuses the revoked user (the pushed JWT, not the preload, is kept)', async () => {
      const server = mesh.servers[0]!;
      await server.kill();
      await server.run();
      await expect(connect({ servers: server.url, authenticator: credsAuthenticator(readFileSync(removed.creds)), reconnect: false })).rejects.toThrow(/authorization/i);
      const ok = await connect({ servers: server.url, authenticator: credsAuthenticator(readFileSync(kept.creds)), reconnect: false });
      await ok.close();
    }, 60_000);
  });
});
