import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../support/cli.js';
import { hashTree, scratch } from '../support/tree.js';

let cleanups: Array<() => void> = [];
afterEach(() => {
  cleanups.forEach((c) => c());
  cleanups = [];
});

async function enrolment(mode: 'adopted' | 'converged' = 'converged') {
  const s = scratch();
  cleanups.push(s.cleanup);
  const root = join(s.dir, 'root');
  mkdirSync(join(root, 'srv'), { recursive: true });
  const config = join(s.dir, 'etc/host.json');
  const state = join(s.dir, 'state');
  const keys = join(s.dir, 'keys');
  expect((await runCli('meshctl', ['keygen', '--out', keys])).code).toBe(0);
  const decl = (over: object = {}) => {
    const path = join(s.dir, `decl-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(path, JSON.stringify({ version: 1, node: 'web-1', mode, sequence: 1, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }], ...over }));
    return path;
  };
  const bundle = async (declPath: string) => {
    const out = join(s.dir, `bundle-${Math.random().toString(36).slice(2)}.json`);
    const r = await runCli('meshctl', ['bundle', declPath, '--key', join(keys, 'operator.nk'), '--server', 'nats://127.0.0.1:4222,nats://127.0.0.1:4223', '--offline', '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    return out;
  };
  const flags = ['--root', root, '--state-dir', state, '--config', config, '--log-level', 'warn'];
  return { dir: s.dir, root, config, state, keys, decl, bundle, flags };
}

describe('genesis', () => {
  it('enrols: verifies, records the mode, applies, marks the bundle consumed, writes the configuration', async () => {
    const e = await enrolment();
    const b = await e.bundle(e.decl());
    const r = await runCli('mesh-host', ['genesis', b, '--mode', 'converged', '--json', ...e.flags]);
    expect(r.code, r.stderr).toBe(0);
    const { report } = JSON.parse(r.stdout);
    expect(report).toMatchObject({ node: 'web-1', trigger: 'genesis', mode: 'converged', outcome: 'converged' });
    expect(existsSync(join(e.root, 'srv/app'))).toBe(true);
    const state = JSON.parse(readFileSync(join(e.state, 'state.json'), 'utf8'));
    expect(state.genesisDigest).toBe(report.declaration.digest);
    expect(state.mode).toBe('converged');
    const config = JSON.parse(readFileSync(e.config, 'utf8'));
    expect(config).toMatchObject({ node: 'web-1', servers: ['nats://127.0.0.1:4222', 'nats://127.0.0.1:4223'], publicKey: readFileSync(join(e.keys, 'operator.pub'), 'utf8').trim() });
    const status = JSON.parse((await runCli('mesh-host', ['status', '--json', ...e.flags])).stdout);
    expect(status).toMatchObject({ node: 'web-1', mode: 'converged', enrolled: true });
  });

  it('refuses a bundle whose declaration says the other mode, naming both and the act', async () => {
    const e = await enrolment('converged');
    const b = await e.bundle(e.decl());
    const before = hashTree(e.root);
    const r = await runCli('mesh-host', ['genesis', b, '--mode', 'adopted', ...e.flags]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/says converged, but this machine is recorded adopted.*'converge' act/);
    expect(hashTree(e.root)).toEqual(before);
  });

  it('a dry run plans and records nothing', async () => {
    const e = await enrolment();
    const b = await e.bundle(e.decl());
    const r = await runCli('mesh-host', ['genesis', b, '--mode', 'converged', '--dry-run', '--json', ...e.flags]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ plan: { steps: [{ resource: 'app', type: 'directory', target: '/srv/app', verb: 'create', changes: [{ kind: 'create' }], actions: ['create'] }] } });
    expect(existsSync(e.config)).toBe(false);
    expect(existsSync(join(e.root, 'srv/app'))).toBe(false);
  });

  it('refuses a second, different bundle on an enrolled machine, and a forged one', async () => {
    const e = await enrolment();
    expect((await runCli('mesh-host', ['genesis', await e.bundle(e.decl()), '--mode', 'converged', ...e.flags])).code).toBe(0);
    const other = await e.bundle(e.decl({ sequence: 2 }));
    const r = await runCli('mesh-host', ['genesis', other, '--mode', 'converged', ...e.flags]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/enrolled already/);
    const forged = JSON.parse(readFileSync(other, 'utf8'));
    forged.declaration.payload = Buffer.from(JSON.stringify({ version: 1, node: 'web-1', mode: 'converged', sequence: 9, resources: [] })).toString('base64');
    writeFileSync(other, JSON.stringify(forged));
    const f = await runCli('mesh-host', ['genesis', other, '--mode', 'converged', ...e.flags]);
    expect(f.code).toBe(3);
    expect(f.stderr).toMatch(/signature refused: the signature does not match/);
  });
});

describe('reconcile', () => {
  it('before the mesh has spoken, applies the carried bundle only when it is what genesis applied', async () => {
    const e = await enrolment();
    const b = await e.bundle(e.decl());
    expect((await runCli('mesh-host', ['genesis', b, '--mode', 'converged', ...e.flags])).code).toBe(0);
    const again = await runCli('mesh-host', ['reconcile', '--json', ...e.flags]);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).report.steps.map((s: { status: string }) => s.status)).toEqual(['unchanged']);
    // Other carried bytes (a bundle signed with the same key, another declaration) are refused.
    writeFileSync(join(e.state, 'bundle.json'), readFileSync(await e.bundle(e.decl({ resources: [] }))));
    const before = hashTree(e.root);
    const r = await runCli('mesh-host', ['reconcile', ...e.flags]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/the carried bundle's declaration is sha256:\w+, but genesis applied sha256:\w+/);
    expect(hashTree(e.root)).toEqual(before);
  });

  it('once the mesh has spoken, applies the kept declaration; the kept declaration wins over a recorded mode, and says so', async () => {
    const e = await enrolment('adopted');
    expect((await runCli('mesh-host', ['genesis', await e.bundle(e.decl()), '--mode', 'adopted', ...e.flags])).code).toBe(0);
    // What the link would have kept: a signed declaration of the mesh's `converge` act.
    const signed = await runCli('meshctl', ['sign', e.decl({ mode: 'converged', sequence: 2 }), '--key', join(e.keys, 'operator.nk')]);
    writeFileSync(join(e.state, 'declared.json'), signed.stdout);
    const r = await runCli('mesh-host', ['reconcile', '--json', ...e.flags]);
    expect(r.code, r.stderr).toBe(0);
    const { report } = JSON.parse(r.stdout);
    expect(report.mode).toBe('converged');
    expect(report.said).toContain('the recorded mode was adopted, the kept signed declaration says converged: the kept declaration wins (repaired)');
    // apply FILE is refused now, and so is any declaration of the other mode by a path that is not the link.
    const applied = await runCli('mesh-host', ['apply', e.decl({ mode: 'converged' }), ...e.flags]);
    expect(applied.code).toBe(3);
    // A kept declaration changed on disk is refused at reconcile: its signature is checked again.
    const tampered = JSON.parse(signed.stdout);
    tampered.payload = Buffer.from(JSON.stringify({ version: 1, node: 'web-1', mode: 'converged', sequence: 3, resources: [] })).toString('base64');
    writeFileSync(join(e.state, 'declared.json'), JSON.stringify(tampered));
    const t = await runCli('mesh-host', ['reconcile', ...e.flags]);
    expect(t.code).toBe(3);
    expect(t.stderr).toMatch(/the kept declaration: signature refused/);
  });

  it('refuses on a machine that is not enrolled', async () => {
    const e = await enrolment();
    const r = await runCli('mesh-host', ['reconcile', ...e.flags]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/not enrolled/);
  });
});

describe('mesh-host chart', () => {
  it('prints the machine as mermaid, dot and json; a bad format is a usage error', async () => {
    const mermaid = await runCli('mesh-host', ['chart', '--format', 'mermaid']);
    expect(mermaid.stdout.startsWith('stateDiagram-v2')).toBe(true);
    expect((await runCli('mesh-host', ['chart', '--format', 'dot'])).stdout).toMatch(/^digraph "host"/);
    const json = JSON.parse((await runCli('mesh-host', ['chart', '--format', 'json'])).stdout);
    expect(json.transitions.length).toBeGreaterThan(30);
    expect((await runCli('mesh-host', ['chart', '--format', 'png'])).code).toBe(2);
  });

  it('docs/lifecycle.md holds the chart the machine draws now', async () => {
    const mermaid = (await runCli('mesh-host', ['chart', '--format', 'mermaid'])).stdout.trimEnd();
    expect(readFileSync(new URL('../../docs/lifecycle.md', import.meta.url), 'utf8')).toContain(mermaid);
  });
});
