import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { createUser } from '@nats-io/nkeys';
import { NatsServer, natsUnavailable } from '../support/nats.js';
import { operatorMode, mutualTls } from '../support/nats-auth.js';
import { projectDir, runCli } from '../support/cli.js';
import { scratch } from '../support/tree.js';

const unavailable = natsUnavailable();
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A way a fleet's servers admit clients: the server's configuration, and the flags meshctl and the bundle take for it. */
interface Admission {
  name: string;
  setUp(dir: string): Promise<{ conf: string; flags: string[] }>;
  /** What the server says to a client without the credential. */
  refusal: RegExp;
}

const admissions: Admission[] = [
  {
    name: 'an nkey seed file',
    async setUp(dir) {
      const user = createUser();
      const seed = join(dir, 'user.nk');
      writeFileSync(seed, new TextDecoder().decode(user.getSeed()), { mode: 0o600 });
      const conf = join(dir, 'nats.conf');
      writeFileSync(conf, `authorization { users = [ { nkey: "${user.getPublicKey()}" } ] }\n`);
      return { conf, flags: ['--nkey', seed] };
    },
    refusal: /authorization/i,
  },
  {
    name: 'a credentials file (operator mode: user JWT and seed)',
    async setUp(dir) {
      const { conf, creds } = await operatorMode(dir);
      return { conf, flags: ['--creds', creds] };
    },
    refusal: /authorization/i,
  },
  {
    name: 'mutual TLS (a CA, and a client certificate the server verifies)',
    async setUp(dir) {
      const tls = mutualTls(dir);
      return { conf: tls.conf, flags: ['--tls-ca', tls.ca, '--tls-cert', tls.cert, '--tls-key', tls.key] };
    },
    refusal: /tls|certificate|ssl/i,
  },
];

describe.skipIf(unavailable !== undefined && !process.env.CI)(`servers that admit only known clients${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const servers: NatsServer[] = [];
  const dirs: { cleanup(): void }[] = [];
  afterAll(async () => {
    for (const server of servers) await server.stop();
    for (const dir of dirs) dir.cleanup();
  });

  describe.each(admissions)('$name', (admission) => {
    it('the bundle carries it, genesis keeps it, the daemon connects with it; meshctl sends and reads reports with it; without it, meshctl is refused at once (exit 3)', async () => {
      const s = scratch('mesh-host-auth-');
      dirs.push(s);
      const { conf, flags: auth } = await admission.setUp(s.dir);
      const server = await NatsServer.start({ configFile: conf });
      servers.push(server);
      const link = ['--server', server.url, ...auth];
      const root = join(s.dir, 'root');
      mkdirSync(join(root, 'srv'), { recursive: true });
      const hostFlags = ['--root', root, '--state-dir', join(s.dir, 'state'), '--config', join(s.dir, 'host.json')];
      const keys = join(s.dir, 'keys');
      const key = join(keys, 'operator.nk');
      expect((await runCli('meshctl', ['keygen', '--out', keys])).code).toBe(0);
      const first = join(s.dir, 'first.json');
      writeFileSync(first, JSON.stringify({ version: 1, node: 'authed', mode: 'converged', sequence: 1, resources: [] }));
      const bundle = join(s.dir, 'bundle.json');
      const made = await runCli('meshctl', ['bundle', first, '--key', key, ...link, '--out', bundle]);
      expect(made.code, made.stderr).toBe(0);
      const genesis = await runCli('mesh-host', ['genesis', bundle, '--mode', 'converged', ...hostFlags, '--log-level', 'warn']);
      expect(genesis.code, genesis.stderr).toBe(0);
      const kept = JSON.parse(readFileSync(join(s.dir, 'host.json'), 'utf8')) as Record<string, unknown>;
      expect(Object.keys(kept)).toEqual(expect.arrayContaining(auth[0] === '--tls-ca' ? ['tls'] : [auth[0] === '--creds' ? 'creds' : 'nkeySeed']));

      // Without the credential the command says so at once; nothing waits for ever.
      const bare = await runCli('meshctl', ['status', 'authed', '--server', server.url], { timeoutMs: 15_000 });
      expect(bare.code, bare.stderr).toBe(3);
      expect(bare.stderr).toMatch(new RegExp(`cannot connect to ${server.url.replace(/[.]/g, '\\.')}: .*(${admission.refusal.source})`, 'i'));

      let log = '';
      const daemon = spawn(process.execPath, [join(projectDir, 'bin/mesh-host'), 'run', ...hostFlags], { stdio: ['ignore', 'pipe', 'pipe'] });
      daemon.stdout.on('data', (d: Buffer) => (log += d.toString()));
      daemon.stderr.on('data', (d: Buffer) => (log += d.toString()));
      try {
        const next = join(s.dir, 'next.json');
        writeFileSync(next, JSON.stringify({ version: 1, node: 'authed', mode: 'converged', resources: [{ type: 'directory', id: 'd', path: '/srv/authed' }] }));
        const sent = await runCli('meshctl', ['send', 'authed', next, '--key', key, ...link]);
        expect(sent.code, sent.stderr).toBe(0);
        const deadline = Date.now() + 20_000;
        while (!existsSync(join(root, 'srv/authed')) && Date.now() < deadline) await wait(100);
        expect(existsSync(join(root, 'srv/authed')), log).toBe(true);
        let reports: { sequence: number; trigger: string }[] = [];
        while (reports.length < 2 && Date.now() < deadline) {
          const read = await runCli('meshctl', ['reports', '--node', 'authed', '--json', ...link]);
          expect(read.code, read.stderr).toBe(0);
          reports = read.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as { sequence: number; trigger: string });
          if (reports.length < 2) await wait(200);
        }
        expect(reports.map((r) => [r.sequence, r.trigger])).toEqual([[1, 'genesis'], [2, 'delivery']]);
      } finally {
        daemon.kill('SIGTERM');
        await new Promise((r) => daemon.once('exit', r));
      }
    });
  });
});
