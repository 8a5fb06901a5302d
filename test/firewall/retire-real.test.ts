import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Report } from '../../src/engine/report/report.js';
import type { StoreState } from '../../src/core/store/state.js';
import type { KeptFoundFirewall } from '../../src/machine/filters/filter-kept.js';
import { projectDir, runCli } from '../support/cli.js';
import { startFirewallContainer } from '../support/firewall-container.js';
import { containerUnavailable, type SystemdContainer } from '../support/systemd-container.js';
import { scratch } from '../support/tree.js';
import { killedIn } from '../support/crash.js';

/**
 * The found firewall's retirement on the real tools: ufw and firewalld in a systemd container with a
 * private network (nothing they do reaches this machine's ruleset), and mesh-host running inside it
 * against its own root, enrolled by a real bundle and reconciled as an operator would.
 */
const unavailable = containerUnavailable();
// Each case runs mesh-host two or three times inside the container, each asking ufw, systemd and nft:
// generous bounds for a loaded machine.
describe.skipIf(unavailable !== undefined && !process.env.CI)(`the found firewall on real ufw and firewalld${unavailable ? ` (cannot run: ${unavailable})` : ''}`, { timeout: 300_000 }, () => {
  let container: SystemdContainer;
  let work: ReturnType<typeof scratch>;
  let keys: string;
  let n = 0;

  beforeAll(async () => {
    work = scratch('mesh-host-firewall-');
    container = await startFirewallContainer(join(work.dir, 'ct'), { binds: [projectDir.replace(/\/$/, ''), work.dir] });
    keys = join(work.dir, 'keys');
    expect((await runCli('meshctl', ['keygen', '--out', keys])).code).toBe(0);
  }, 180_000);
  afterAll(async () => {
    await container?.stop();
    work?.cleanup();
  });

  const sh = async (command: string) => {
    const r = await container.exec('/bin/sh', ['-c', command], 60_000);
    if (r.code !== 0) throw new Error(`${command}: exit ${r.code}: ${r.stderr}${r.stdout}`);
    return r.stdout.trim();
  };
  const ufwStatus = async () => (await container.exec('ufw', ['status'])).stdout.split('\n')[0]!.trim();
  const unit = async (property: 'ActiveState' | 'UnitFileState') => (await sh(`systemctl show -p ${property} --value firewalld.service`));
  /** Waits on the event itself: firewalld is up once it answers. */
  const firewalldUp = async () => {
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
      if ((await container.exec('firewall-cmd', ['--state'])).stdout.trim() === 'running') return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error('firewalld did not come up within 60 s');
  };

  // Every test starts from both firewalls off, the way an operator would turn them off.
  beforeEach(async () => {
    await sh('ufw disable >/dev/null; systemctl disable --now firewalld.service 2>/dev/null; true');
  });

  /** A machine enrolled with its own state: genesis of a bundle signed by the control plane's key, then reconciles. */
  async function machine(mode: 'converged' | 'adopted') {
    const dir = join(work.dir, `machine-${++n}`);
    mkdirSync(dir, { recursive: true });
    const decl = join(dir, 'decl.json');
    writeFileSync(decl, JSON.stringify({ version: 1, node: 'fw', mode, sequence: 1, resources: [{ type: 'directory', id: 'app', path: `/srv/app-${n}` }] }));
    const bundle = join(dir, 'bundle.json');
    const b = await runCli('meshctl', ['bundle', decl, '--key', join(keys, 'operator.nk'), '--server', 'nats://127.0.0.1:4222', '--offline', '--out', bundle]);
    expect(b.code, b.stderr).toBe(0);
    const state = join(dir, 'state');
    const flags = ['--json', '--root', '/', '--state-dir', state, '--config', join(dir, 'host.json'), '--log-level', 'warn'];
    const run = async (args: string[], prefix: string[] = []) => {
      const r = await container.exec(prefix[0] ?? process.execPath, [...prefix.slice(1), ...(prefix.length ? [process.execPath] : []), join(projectDir, 'bin/mesh-host'), ...args, ...flags], 120_000);
      return { ...r, report: r.stdout ? (JSON.parse(r.stdout) as { report?: Report }).report : undefined };
    };
    return {
      state,
      genesis: () => run(['genesis', bundle, '--mode', mode]),
      reconcile: (prefix: string[] = []) => run(['reconcile'], prefix),
      stored: () => JSON.parse(readFileSync(join(state, 'state.json'), 'utf8')) as StoreState,
      /** `mesh-host status --json`'s found firewall: what the store keeps, as the operator reads it. */
      status: async () => {
        const r = await container.exec(process.execPath, [join(projectDir, 'bin/mesh-host'), 'status', ...flags], 60_000);
        expect(r.code, r.stderr).toBe(0);
        return (JSON.parse(r.stdout) as { foundFirewall: KeptFoundFirewall[] }).foundFirewall;
      },
      statusText: async () => (await container.exec(process.execPath, [join(projectDir, 'bin/mesh-host'), 'status', ...flags.filter((f) => f !== '--json')], 60_000)).stdout,
    };
  }
  const tool = (report: Report | undefined, name: string) => report?.facts.foundFirewall?.tools.find((t) => t.tool === name);

  it('a converged apply retires an active ufw through ufw itself, keeps it in the store, and says so; the other, found inactive, is recorded as found', async () => {
    await sh('ufw --force enable && ufw allow 22/tcp && ufw deny 3306/tcp');
    const m = await machine('converged');
    const { code, report } = await m.genesis();
    expect(code, report ? JSON.stringify(report.said) : '').toBe(0);
    expect(report!.said).toContainEqual(expect.stringMatching(/^found firewall ufw was active: retired \(ufw disable\); it stays off across boots$/));
    expect(report!.said).toContainEqual(expect.stringMatching(/^found firewall firewalld is inactive \(.*\): recorded as found inactive, not as the mesh's doing$/));
    expect(await ufwStatus()).toBe('Status: inactive');
    expect(await sh('grep ^ENABLED= /etc/ufw/ufw.conf')).toBe('ENABLED=no');
    expect(tool(report, 'ufw')).toMatchObject({ state: 'inactive', recorded: 'retired' });
    expect(tool(report, 'firewalld')).toMatchObject({ state: 'inactive', enabled: false, recorded: 'found-inactive' });
    // The filters are read after the retirement: ufw's chains are gone.
    expect(report!.facts.filters.filter((f) => f.kind === 'filter' && f.by === 'ufw')).toEqual([]);
    expect(m.stored().foundFirewall).toMatchObject({ ufw: { status: 'retired', retirements: 1 }, firewalld: { status: 'found-inactive' } });
    expect(await m.status()).toEqual(expect.arrayContaining([
      expect.objectContaining({ tool: 'ufw', state: 'retired', retirements: 1 }),
      expect.objectContaining({ tool: 'firewalld', state: 'found-inactive' }),
    ]));
    const text = await m.statusText();
    expect(text).toMatch(/^found firewall:$/m);
    expect(text).toMatch(/^ {2}ufw +retired by the mesh at \S+; it stays off across boots$/m);
    expect(text).toMatch(/^ {2}firewalld +found inactive at \S+: recorded as found, never the mesh's doing$/m);
  });

  it('ufw enabled again by hand is retired again at the next reconcile, and the report says so', async () => {
    await sh('ufw --force enable');
    const m = await machine('converged');
    expect((await m.genesis()).code).toBe(0);
    const retiredAt = m.stored().foundFirewall!.ufw!.since;
    await sh('ufw --force enable');
    const { code, report } = await m.reconcile();
    expect(code).toBe(0);
    expect(report!.trigger).toBe('reconcile');
    expect(report!.said).toContainEqual(`found firewall ufw was enabled again since the mesh retired it at ${retiredAt}: retired (ufw disable); it stays off across boots`);
    expect(await ufwStatus()).toBe('Status: inactive');
    expect(m.stored().foundFirewall!.ufw).toMatchObject({ status: 'retired', retirements: 2 });
    expect(await m.status()).toContainEqual(expect.objectContaining({ tool: 'ufw', state: 'retired-again', retirements: 2 }));
    expect(await m.statusText()).toMatch(/^ {2}ufw +retired again at \S+: enabled again by hand after the mesh retired it, 2 retirements in all$/m);
  });

  it('firewalld is retired by systemctl disable and stop, and again when enabled again by hand', async () => {
    await sh('systemctl enable --now firewalld.service');
    await firewalldUp();
    const m = await machine('converged');
    const first = await m.genesis();
    expect(first.code, JSON.stringify(first.report?.said)).toBe(0);
    expect(first.report!.said).toContainEqual('found firewall firewalld was active: retired (systemctl disable firewalld.service, systemctl stop firewalld.service); it stays off across boots');
    expect(await unit('ActiveState')).toBe('inactive');
    expect(await unit('UnitFileState')).toBe('disabled');
    expect(tool(first.report, 'firewalld')).toMatchObject({ state: 'inactive', enabled: false, recorded: 'retired' });
    expect(first.report!.facts.filters.filter((f) => f.kind === 'filter' && f.by === 'firewalld')).toEqual([]);

    await sh('systemctl enable --now firewalld.service');
    await firewalldUp();
    const again = await m.reconcile();
    expect(again.code).toBe(0);
    expect(again.report!.said).toContainEqual(expect.stringMatching(/^found firewall firewalld was enabled again since the mesh retired it at \S+: retired \(systemctl disable firewalld\.service, systemctl stop firewalld\.service\)/));
    expect(await unit('ActiveState')).toBe('inactive');
    expect(await unit('UnitFileState')).toBe('disabled');
  });

  it('a firewall found inactive is recorded as found so; enabled later, it is retired and the report says it was found inactive', async () => {
    const m = await machine('converged');
    const first = await m.genesis();
    expect(first.code).toBe(0);
    expect(first.report!.said.filter((s) => s.includes('retired'))).toEqual([]);
    expect(m.stored().foundFirewall).toMatchObject({ ufw: { status: 'found-inactive' }, firewalld: { status: 'found-inactive' } });
    const foundAt = m.stored().foundFirewall!.ufw!.since;
    // A quiet reconcile has nothing to say: found inactive is not news twice.
    const quiet = await m.reconcile();
    expect(quiet.code).toBe(0);
    expect(m.stored().foundFirewall!.ufw).toEqual({ status: 'found-inactive', since: foundAt });

    await sh('ufw --force enable');
    const { report } = await m.reconcile();
    expect(report!.said).toContainEqual(`found firewall ufw, found inactive at ${foundAt}, was enabled since: retired (ufw disable); it stays off across boots`);
    expect(m.stored().foundFirewall!.ufw).toMatchObject({ status: 'retired', retirements: 1 });
  });

  it('a crash between the steps of a retirement is finished at the next apply', async () => {
    const m = await machine('converged');
    expect((await m.genesis()).code).toBe(0);
    await sh('systemctl enable --now firewalld.service');
    await firewalldUp();
    // The process is killed at its second rename during the reconcile (its main thread's, where the
    // store is saved; the lock is taken by link): after "retiring" was saved and firewalld disabled,
    // before that step was recorded and before firewalld was stopped.
    const log = join(m.state, '..', 'strace.log');
    const crashed = await m.reconcile(['/usr/bin/env', 'UV_USE_IO_URING=0', 'strace', '-qq', '-o', log, '-e', 'trace=rename', '-e', 'inject=rename:signal=SIGKILL:when=2']);
    // Killed, and where: strace's log shows the thread that died of SIGKILL in the store's rename.
    expect(killedIn(readFileSync(log, 'utf8'), 'rename'), crashed.stderr).toMatch(/rename\("[^"]*\/state\/state\.json\.tmp-[^"]+", "[^"]*\/state\/state\.json"/);
    expect(crashed.report).toBeUndefined();
    expect(m.stored().foundFirewall!.firewalld).toMatchObject({ status: 'retiring', stepsDone: [] });
    expect(await m.status()).toContainEqual(expect.objectContaining({ tool: 'firewalld', state: 'retiring', stepsDone: [] }));
    expect(await unit('UnitFileState')).toBe('disabled');
    expect(await unit('ActiveState')).toBe('active');

    const { code, report } = await m.reconcile();
    expect(code, JSON.stringify(report?.said)).toBe(0);
    expect(report!.said).toContainEqual(expect.stringMatching(/^the retirement of found firewall firewalld, begun at \S+ and not finished, was finished: retired \(systemctl disable firewalld\.service, systemctl stop firewalld\.service\)/));
    expect(await unit('ActiveState')).toBe('inactive');
    expect(m.stored().foundFirewall!.firewalld).toMatchObject({ status: 'retired', retirements: 1 });
  });

  it("an adopted machine's found firewall is reported and left alone", async () => {
    await sh('ufw --force enable && ufw allow 22/tcp');
    const m = await machine('adopted');
    const { code, report } = await m.genesis();
    expect(code).toBe(0);
    expect(report!.mode).toBe('adopted');
    expect(report!.said).toContainEqual("found firewall ufw is active: left alone (an adopted machine's found firewall is only reported)");
    expect(tool(report, 'ufw')).toMatchObject({ state: 'active', enabled: true });
    expect(tool(report, 'ufw')!.recorded).toBeUndefined();
    expect(report!.facts.filters).toContainEqual(expect.objectContaining({ kind: 'filter', owner: 'found', by: 'ufw', chain: 'ufw-user-input' }));
    expect(await ufwStatus()).toBe('Status: active');
    expect(m.stored().foundFirewall?.ufw).toBeUndefined();
    expect((await m.status()).map((k) => k.tool)).not.toContain('ufw');
  });
});
