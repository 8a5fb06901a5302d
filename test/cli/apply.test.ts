import { afterEach, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { acquireLock } from '../../src/core/store/store-lock.js';
import { projectDir, runCli } from '../support/cli.js';
import { hashTree, scratch } from '../support/tree.js';
import { straceMissing } from '../support/crash.js';

let cleanups: Array<() => void> = [];
afterEach(() => {
  cleanups.forEach((c) => c());
  cleanups = [];
});

interface Setup {
  root: string;
  state: string;
  config: string;
  decl: string;
  flags: string[];
}

function setup(resources: unknown[] = [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: 'a=1\n' }], config: object = {}): Setup {
  const s = scratch();
  cleanups.push(s.cleanup);
  const root = join(s.dir, 'root');
  mkdirSync(join(root, 'srv'), { recursive: true });
  mkdirSync(join(root, 'etc'), { recursive: true });
  const configPath = join(s.dir, 'host.json');
  writeFileSync(configPath, JSON.stringify({ node: 'cli-node', lockTimeoutMs: 1500, ...config }));
  const decl = join(s.dir, 'decl.json');
  writeFileSync(decl, JSON.stringify({ version: 1, node: 'cli-node', mode: 'converged', sequence: 1, resources }));
  const state = join(s.dir, 'state');
  return { root, state, config: configPath, decl, flags: ['--root', root, '--state-dir', state, '--config', configPath, '--log-level', 'warn'] };
}

describe('mesh-host apply', () => {
  it('prints {plan} for --json --dry-run and {plan, report} for --json, in the shapes docs/wire.md gives', async () => {
    const s = setup();
    const dry = await runCli('mesh-host', ['apply', s.decl, '--dry-run', '--json', ...s.flags]);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toEqual({ plan: { steps: [
      { resource: 'app', type: 'directory', target: '/srv/app', verb: 'create', changes: [{ kind: 'create' }], actions: ['create'] },
      { resource: 'conf', type: 'file', target: '/srv/app/app.conf', verb: 'create', changes: [{ kind: 'create' }], actions: ['create'] },
    ] } });
    expect(existsSync(join(s.root, 'srv/app'))).toBe(false);

    const applied = await runCli('mesh-host', ['--json', 'apply', s.decl, ...s.flags]);
    expect(applied.code).toBe(0);
    const { plan, report } = JSON.parse(applied.stdout);
    expect(plan.steps).toHaveLength(2);
    expect(report).toMatchObject({
      node: 'cli-node', sequence: 1, trigger: 'apply', mode: 'converged', outcome: 'converged',
      declaration: { sequence: 1, digest: expect.stringMatching(/^sha256:/) },
      facts: { held: [], links: [] },
    });
    // A scratch tree is not this machine: its filters and found firewall are said not read, never none.
    const notRead = `not read: the apply ran on the scratch tree ${s.root} (--root), not on this machine`;
    expect(report.facts.filters).toEqual([
      { kind: 'unknown', backend: 'nft', command: 'nft -j list ruleset', reason: notRead },
      { kind: 'unknown', backend: 'legacy', command: 'iptables-legacy-save; ip6tables-legacy-save', reason: notRead },
    ]);
    expect(report.facts.foundFirewall).toEqual({ tools: [], notRead });
    expect(report.steps.map((s: { status: string }) => s.status)).toEqual(['done', 'done']);
    expect(Object.keys(report).sort()).toEqual(['declaration', 'facts', 'finishedAt', 'mode', 'node', 'outcome', 'said', 'sequence', 'startedAt', 'steps', 'trigger']);

    const again = await runCli('mesh-host', ['apply', s.decl, ...s.flags]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('plan: 0 of 2 steps to take');
    expect(again.stdout).toContain('converged (report 2): 2 unchanged');
  });

  it('prints the plan before it touches anything, one readable line a step to take', async () => {
    const s = setup([{ type: 'file', id: 'x', path: '/etc/x.conf', content: 'a\nb\nc\nd\n', mode: '0640' }]);
    await runCli('mesh-host', ['apply', s.decl, ...s.flags]);
    writeFileSync(join(s.root, 'etc/x.conf'), 'a\nz\n', { mode: 0o644 });
    const { chmodSync } = await import('node:fs');
    chmodSync(join(s.root, 'etc/x.conf'), 0o644);
    const dry = await runCli('mesh-host', ['apply', s.decl, '--dry-run', ...s.flags]);
    expect(dry.stdout).toContain('update /etc/x.conf: content (+3 −1 lines), mode 0644→0640');
  });

  it('prints a --json document larger than a pipe holds whole: the process ends only once its output is out', async () => {
    const files = Array.from({ length: 1500 }, (_, n) => ({ type: 'file', id: `f${n}`, path: `/srv/f${n}.conf`, content: `n=${n}\n` }));
    const s = setup(files);
    const dry = await runCli('mesh-host', ['apply', s.decl, '--dry-run', '--json', ...s.flags]);
    expect(dry.code).toBe(0);
    expect(dry.stdout.length).toBeGreaterThan(128 * 1024);
    expect(JSON.parse(dry.stdout).plan.steps).toHaveLength(1500);
  });

  it('exits 3 before touching anything when a directory is missing that nothing declares, naming the step', async () => {
    const s = setup([{ type: 'file', id: 'nowhere', path: '/missing/dir/file', content: '' }]);
    const before = hashTree(s.root);
    const result = await runCli('mesh-host', ['apply', s.decl, ...s.flags]);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('nowhere (/missing/dir/file): its directory /missing/dir does not exist');
    expect(hashTree(s.root)).toEqual(before);
  });

  it('refuses with exit 3 when the mesh has spoken (declared.json is kept)', async () => {
    const s = setup();
    mkdirSync(s.state, { recursive: true, mode: 0o700 });
    writeFileSync(join(s.state, 'declared.json'), '{}');
    const before = hashTree(s.root);
    const result = await runCli('mesh-host', ['apply', s.decl, ...s.flags]);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/declared\.json exists.*only for a machine it has not/);
    expect(hashTree(s.root)).toEqual(before);
  });

  it('refuses an archive to be fetched when no link is configured, saying so, touching nothing', async () => {
    const s = setup([{ type: 'directory', id: 'a', path: '/srv/a' }, { type: 'archive', id: 'bin', path: '/srv/bin', sha256: 'a'.repeat(64), source: { object: 'bin.tgz' } }]);
    const before = hashTree(s.root);
    const result = await runCli('mesh-host', ['apply', s.decl, ...s.flags]);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain("bin (/srv/bin): object 'bin.tgz' must be fetched from the archive store, and this host has no link (no servers are configured)");
    expect(hashTree(s.root)).toEqual(before);
  });

  it('refuses services where no service manager functions, naming why, touching nothing', async () => {
    const s = setup([{ type: 'directory', id: 'a', path: '/srv/a' }, { type: 'service', id: 'svc', unit: 'x.service', state: 'running' }]);
    const before = hashTree(s.root);
    const result = await runCli('mesh-host', ['apply', s.decl, ...s.flags]);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/services are declared or recorded, but no service manager functions here: systemd: .*not the init/);
    expect(hashTree(s.root)).toEqual(before);
  });

  it('stops with exit 4 on a corrupt state.json and leaves it as it was', async () => {
    const s = setup();
    mkdirSync(s.state, { recursive: true, mode: 0o700 });
    writeFileSync(join(s.state, 'state.json'), 'garbage{');
    const result = await runCli('mesh-host', ['apply', s.decl, ...s.flags]);
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/cannot be read.*left untouched/);
    expect(readFileSync(join(s.state, 'state.json'), 'utf8')).toBe('garbage{');
  });

  it('refuses invalid declarations with exit 3 and leaves the tree byte-identical (property)', async () => {
    const s = setup();
    await runCli('mesh-host', ['apply', s.decl, ...s.flags]);
    const tree = hashTree(s.root);
    const store = readFileSync(join(s.state, 'state.json'));
    const invalid = fc.oneof(
      fc.record({ version: fc.integer({ min: 2 }), node: fc.constant('cli-node'), mode: fc.constant('converged'), sequence: fc.nat(), resources: fc.constant([]) }),
      fc.string().filter((p) => !p.startsWith('/')).map((p) => ({ version: 1, node: 'cli-node', mode: 'converged', sequence: 2, resources: [{ type: 'file', id: 'conf', path: p, content: 'evil' }] })),
      fc.constantFrom('symlink', 'exec', 'command', 'package').map((t) => ({ version: 1, node: 'cli-node', mode: 'converged', sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: t, id: 'x' }] })),
      fc.constant({ version: 1, node: 'someone-else', mode: 'converged', sequence: 2, resources: [] }),
      fc.string({ minLength: 1, maxLength: 40 }).map((garbage) => `{${garbage}`),
    );
    const samples = fc.sample(invalid, { numRuns: 12, seed: 42 });
    for (const sample of samples) {
      writeFileSync(s.decl, typeof sample === 'string' ? sample : JSON.stringify(sample));
      const result = await runCli('mesh-host', ['apply', s.decl, ...s.flags]);
      expect(result.code, `${JSON.stringify(sample)}\n${result.stderr}`).toBe(3);
      expect(result.stderr).toMatch(/refused|not JSON/);
      expect(hashTree(s.root)).toEqual(tree);
      expect(readFileSync(join(s.state, 'state.json'))).toEqual(store);
    }
  });
});

describe('the lock', () => {
  it('serializes two processes applying at once', async () => {
    const s = setup();
    const [a, b] = await Promise.all([runCli('mesh-host', ['apply', s.decl, '--json', ...s.flags]), runCli('mesh-host', ['apply', s.decl, '--json', ...s.flags])]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const sequences = [JSON.parse(a.stdout).report.sequence, JSON.parse(b.stdout).report.sequence].sort();
    expect(sequences).toEqual([1, 2]);
    expect(JSON.parse(readFileSync(join(s.state, 'state.json'), 'utf8')).reportSequence).toBe(2);
  });

  it('waits for a live holder, then gives up naming it (exit 3)', async () => {
    const s = setup();
    mkdirSync(s.state, { recursive: true, mode: 0o700 });
    const lock = await acquireLock(s.state, { command: 'test holder' });
    try {
      const result = await runCli('mesh-host', ['apply', s.decl, ...s.flags]);
      expect(result.code).toBe(3);
      expect(result.stderr).toContain(`is held by pid ${process.pid} (test holder, since`);
      expect(existsSync(join(s.root, 'srv/app'))).toBe(false);
    } finally {
      lock.release();
    }
  });

  it('takes over at once from a holder that crashed', async () => {
    // An hour to wait for the lock: the apply ends within the test's bound only by taking the dead
    // holder's lock over, never by waiting for it to go.
    const s = setup(undefined, { lockTimeoutMs: 3_600_000 });
    mkdirSync(s.state, { recursive: true, mode: 0o700 });
    // A holder that was killed -9: its lock file stays, its PID is gone.
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    writeFileSync(join(s.state, 'lock'), JSON.stringify({ pid: dead, startTicks: 1, bootId: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(), command: 'mesh-host apply', since: 'then' }));
    const result = await runCli('mesh-host', ['apply', s.decl, ...s.flags]);
    expect(result.code).toBe(0);
    expect(existsSync(join(s.state, 'lock'))).toBe(false);
  });

  it('a holder killed -9 mid-apply does not block the next one', async () => {
    const s = setup();
    mkdirSync(s.state, { recursive: true, mode: 0o700 });
    const holder = spawn(process.execPath, ['--input-type=module', '-e', `
      const { acquireLock } = await import(${JSON.stringify(join(projectDir, 'dist/src/core/store/store-lock.js'))});
      await acquireLock(${JSON.stringify(s.state)}, { command: 'doomed' });
      console.log('held'); setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise((resolve) => holder.stdout.once('data', resolve));
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    const result = await runCli('mesh-host', ['apply', s.decl, ...s.flags]);
    expect(result.code).toBe(0);
  });
});

describe.skipIf(straceMissing && !process.env.CI)('the store under fault injection, through the whole command', () => {
  it('EIO on the store rename: the apply reports the failure and the old store stays byte-identical', async () => {
    // Directories only: the store's rename is the only rename the command makes.
    const s = setup([{ type: 'directory', id: 'a', path: '/srv/a' }]);
    await runCli('mesh-host', ['apply', s.decl, ...s.flags]);
    const before = readFileSync(join(s.state, 'state.json'));
    writeFileSync(s.decl, JSON.stringify({ version: 1, node: 'cli-node', mode: 'converged', sequence: 2, resources: [{ type: 'directory', id: 'a', path: '/srv/a' }, { type: 'directory', id: 'b', path: '/srv/b' }] }));
    const run = spawnSync('strace', ['-f', '-qq', '-e', 'trace=rename', '-e', 'inject=rename:error=EIO', process.execPath, join(projectDir, 'bin/mesh-host'), 'apply', s.decl, '--json', ...s.flags], { encoding: 'utf8', env: { ...process.env, UV_USE_IO_URING: '0' } });
    expect(run.status, run.stderr).toBe(1);
    const json = run.stdout.slice(run.stdout.indexOf('{'));
    // The first durable rename is the report's entry in the outbox (the head waits for it) or the head itself: either way nothing is committed.
    expect(JSON.parse(json).report.error.message).toMatch(/(the store could not be saved|the report could not be kept in the outbox) \(EIO\)/);
    expect(readFileSync(join(s.state, 'state.json'))).toEqual(before);
  });
});
