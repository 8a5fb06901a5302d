import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { validateDeclaration, pathProblem } from '../../src/core/declaration/validate.js';
import { receiveDeclaration, MAX_DECLARATION_BYTES } from '../../src/core/declaration/load.js';
import { HostError } from '../../src/core/system/errors.js';

const good = () => ({
  version: 1,
  node: 'web-1',
  mode: 'converged',
  epoch: 4,
  sequence: 42,
  resources: [
    { type: 'directory', id: 'jails', path: '/etc/fail2ban/jail.d', mode: '0755' },
    { type: 'file', id: 'jail-sshd', path: '/etc/fail2ban/jail.d/sshd.conf', content: '[sshd]\n', mode: '0644', owner: 'root', group: 'root' },
    { type: 'archive', id: 'nats-bin', path: '/opt/nats', sha256: 'a'.repeat(64), source: { inline: 'H4sI' } },
    { type: 'service', id: 'fail2ban', unit: 'fail2ban.service', state: 'running', enabled: true, restartOn: ['jail-sshd'] },
  ],
});

async function problemsOf(value: unknown, node?: string) {
  const result = await validateDeclaration(value, node === undefined ? {} : { node });
  return result.ok ? [] : result.problems;
}

describe('declaration v1', () => {
  it('accepts the vocabulary of all four types', async () => {
    expect(await problemsOf(good())).toEqual([]);
  });

  const cases: Array<[string, (d: ReturnType<typeof good>) => unknown, string, RegExp]> = [
    ['an unknown version', (d) => ({ ...d, version: 2 }), '/version', /unknown version 2/],
    ['an unknown type', (d) => ((d.resources[0] as Record<string, unknown>).type = 'symlink', d), '/resources/0/type', /unknown resource type "symlink"/],
    ['an unknown field', (d) => ((d.resources[1] as Record<string, unknown>).sudo = true, d), '/resources/1/sudo', /unknown field/],
    ['an unknown top-level field', (d) => ({ ...d, run: 'rm -rf /' }), '/run', /unknown field/],
    ['a duplicate id', (d) => ((d.resources[1]!.id = 'jails'), d), '/resources/1/id', /declared twice/],
    ['a duplicate path', (d) => ((d.resources[2] as { path: string }).path = '/etc/fail2ban/jail.d', d), '/resources/2/path', /declared twice/],
    ['a relative path', (d) => ((d.resources[0] as { path: string }).path = 'etc/x', d), '/resources/0/path', /pattern|not absolute/],
    ['a non-normal path', (d) => ((d.resources[0] as { path: string }).path = '/etc/../root', d), '/resources/0/path', /not a normal path/],
    ['a trailing slash', (d) => ((d.resources[0] as { path: string }).path = '/etc/x/', d), '/resources/0/path', /not a normal path/],
    ['a bad mode', (d) => ((d.resources[1] as { mode: string }).mode = '0999', d), '/resources/1/mode', /pattern/],
    ['a restartOn naming no file', (d) => ((d.resources[3] as { restartOn: string[] }).restartOn = ['jails'], d), '/resources/3/restartOn/0', /names no declared file/],
    ['a missing sequence', (d) => { const { sequence: _, ...rest } = d; return rest; }, '/', /sequence/],
    ['a bad node id', (d) => ({ ...d, node: 'a.b' }), '/node', /pattern/],
    ['a file inside an archive', (d) => ({ ...d, resources: [...d.resources, { type: 'file', id: 'inside', path: '/opt/nats/bin/x', content: '' }] }), '/resources/4/path', /lies inside the archive at \/resources\/2/],
    ['a file before its directory', (d) => ({ ...d, resources: [d.resources[1], d.resources[0]] }), '/resources/0/path', /comes before its directory/],
  ];
  for (const [what, mutate, path, message] of cases) {
    it(`refuses ${what}, naming ${path}`, async () => {
      const problems = await problemsOf(mutate(good()));
      expect(problems.length).toBeGreaterThan(0);
      const hit = problems.find((p) => p.path === path);
      expect(hit, JSON.stringify(problems)).toBeDefined();
      expect(hit!.message).toMatch(message);
    });
  }

  it('refuses a declaration for another node', async () => {
    expect(await problemsOf(good(), 'web-2')).toEqual([{ path: '/node', message: "declared for node 'web-1', but this is 'web-2'", wrongNode: true }]);
  });

  it('names every problem, not only the first', async () => {
    const d = good() as Record<string, unknown> & ReturnType<typeof good>;
    (d.resources[0] as { mode: string }).mode = 'rwx';
    (d.resources[1] as Record<string, unknown>).colour = 'red';
    d.extra = 1;
    expect((await problemsOf(d)).map((p) => p.path).sort()).toEqual(['/extra', '/resources/0/mode', '/resources/1/colour']);
  });

  it('lets the event loop go through a long declaration: the pause is asked for every 64 resources, in each pass', async () => {
    const resources = [{ type: 'directory', id: 'a', path: '/srv/a' }, ...Array.from({ length: 2000 }, (_, i) => ({ type: 'file', id: `f${i}`, path: `/srv/a/${i}`, content: '' }))];
    let pauses = 0;
    const result = await validateDeclaration({ ...good(), resources }, { pause: async () => void pauses++ });
    expect(result.ok).toBe(true);
    expect(pauses).toBe(3 * Math.ceil(resources.length / 64));
    // The relations are still checked across the pauses: a directory after what it holds.
    const late = await validateDeclaration({ ...good(), resources: [...resources.slice(1), resources[0]!] }, { pause: async () => undefined });
    expect(late.ok ? [] : late.problems.map((p) => p.path)).toContain('/resources/0/path');
  });

  it('refuses bytes over the bound before parsing them', async () => {
    const big = Buffer.alloc(MAX_DECLARATION_BYTES + 1, 0x20);
    await expect(receiveDeclaration(big, { source: 'big.json' })).rejects.toThrow(/over the bound/);
  });

  it('normal paths', () => {
    expect(pathProblem('/etc/x')).toBeUndefined();
    for (const bad of ['/', '//etc', '/etc//x', '/etc/./x', '/etc/x/..', 'x']) expect(pathProblem(bad), bad).toBeDefined();
  });

  it('accepts nothing that breaks one rule (property)', async () => {
    // Each arbitrary breaks the vocabulary in one way; none may be accepted.
    const mutations = fc.oneof(
      fc.record({ key: fc.string({ minLength: 1 }).filter((k) => !['version', 'node', 'mode', 'epoch', 'sequence', 'resources'].includes(k)), value: fc.jsonValue() }).map(({ key, value }) => (d: Record<string, unknown>) => ({ ...d, [key]: value })),
      fc.integer().filter((v) => v !== 1).map((v) => (d: Record<string, unknown>) => ({ ...d, version: v })),
      fc.string().filter((t) => !['directory', 'file', 'archive', 'service'].includes(t)).map((t) => (d: Record<string, unknown>) => ({ ...d, resources: [{ type: t, id: 'x', path: '/x' }] })),
      fc.string().filter((m) => !/^[0-7]{3,4}$/.test(m)).map((m) => (d: Record<string, unknown>) => ({ ...d, resources: [{ type: 'directory', id: 'x', path: '/x', mode: m }] })),
      fc.string().filter((p) => pathProblem(p) !== undefined).map((p) => (d: Record<string, unknown>) => ({ ...d, resources: [{ type: 'file', id: 'x', path: p, content: '' }] })),
      fc.constantFrom('adopt', 'converge', '', 'ADOPTED').map((m) => (d: Record<string, unknown>) => ({ ...d, mode: m })),
      fc.integer({ max: -1 }).map((s) => (d: Record<string, unknown>) => ({ ...d, sequence: s })),
    );
    await fc.assert(
      fc.asyncProperty(mutations, async (mutate) => {
        const value = mutate(good() as unknown as Record<string, unknown>);
        expect((await validateDeclaration(value)).ok).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('turns problems into one refusal with exit 3, each named by path', async () => {
    const bytes = Buffer.from(JSON.stringify({ ...good(), version: 7 }));
    try {
      await receiveDeclaration(bytes, { source: 'd.json' });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(HostError);
      expect((err as HostError).exitCode).toBe(3);
      expect((err as HostError).details).toContain('/version: unknown version 7 (this host speaks version 1)');
    }
  });
});
