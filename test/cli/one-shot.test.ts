import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../support/cli.js';
import { scratch } from '../support/tree.js';

let cleanups: Array<() => void> = [];
afterEach(() => {
  cleanups.forEach((c) => c());
  cleanups = [];
});

function setup() {
  const s = scratch();
  cleanups.push(s.cleanup);
  const root = join(s.dir, 'root');
  mkdirSync(join(root, 'etc'), { recursive: true });
  const config = join(s.dir, 'host.json');
  writeFileSync(config, JSON.stringify({ node: 'one-shot', lockTimeoutMs: 1500 }));
  const state = join(s.dir, 'state');
  let sequence = 0;
  const declare = (resources: unknown[]) => {
    const path = join(s.dir, `decl-${++sequence}.json`);
    writeFileSync(path, JSON.stringify({ version: 1, node: 'one-shot', mode: 'converged', sequence, resources }));
    return path;
  };
  return { root, state, declare, flags: ['--root', root, '--state-dir', state, '--config', config] };
}

const SECRET = 'password = hunter2-very-secret';

describe('the one-shot commands: --diff, sensitive files, --detailed-exitcodes, logs on stderr', () => {
  it('--diff shows a unified diff of each content change, in a dry run and in an apply; the plan and report alone are on stdout', async () => {
    const s = setup();
    writeFileSync(join(s.root, 'etc/app.conf'), 'a = 1\nb = 2\nc = 3\n');
    const decl = s.declare([{ type: 'file', id: 'app', path: '/etc/app.conf', content: 'a = 1\nb = 20\nc = 3\n', take: true }, { type: 'file', id: 'new', path: '/etc/new.conf', content: 'fresh\n' }]);
    const dry = await runCli('mesh-host', ['apply', decl, '--dry-run', '--diff', ...s.flags]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(['--- a/etc/app.conf', '+++ b/etc/app.conf', '@@ -1,3 +1,3 @@', ' a = 1', '-b = 2', '+b = 20', ' c = 3'].join('\n'));
    expect(dry.stdout).toContain(['--- /dev/null', '+++ b/etc/new.conf', '@@ -0,0 +1,1 @@', '+fresh'].join('\n'));
    expect(readFileSync(join(s.root, 'etc/app.conf'), 'utf8')).toBe('a = 1\nb = 2\nc = 3\n');

    const applied = await runCli('mesh-host', ['apply', decl, '--diff', '--log-level', 'debug', ...s.flags]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain('+b = 20');
    // stdout is the plan and the report, nothing else; the logs (JSON lines when piped) are on stderr.
    expect(applied.stdout).not.toContain('"level"');
    expect(applied.stdout.split('\n')[0]).toMatch(/^plan: 2 of 2 steps to take$/);
    expect(applied.stderr).toContain('"msg":"apply converged"');
    // The diff is the plan's alone: the report the mesh gets does not carry it.
    const json = await runCli('mesh-host', ['apply', s.declare([{ type: 'file', id: 'app', path: '/etc/app.conf', content: 'z\n', take: true }]), '--diff', '--json', ...s.flags]);
    const { plan, report } = JSON.parse(json.stdout);
    expect(plan.diffs).toEqual([{ resource: 'app', target: '/etc/app.conf', diff: expect.stringContaining('+z') }]);
    expect(JSON.stringify(report)).not.toContain('+z');
  });

  it('a sensitive file never shows its content: not in a diff, a plan, a log or a report', async () => {
    const s = setup();
    writeFileSync(join(s.root, 'etc/secret.conf'), 'password = old-secret\n');
    const first = s.declare([{ type: 'file', id: 'secret', path: '/etc/secret.conf', content: `${SECRET}\n`, mode: '0600', take: true, sensitive: true }]);
    const outputs: string[] = [];
    const dry = await runCli('mesh-host', ['apply', first, '--dry-run', '--diff', '--log-level', 'trace', ...s.flags]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('/etc/secret.conf: sensitive: would change');
    expect(dry.stdout).toContain('content (sensitive, not shown)');
    outputs.push(dry.stdout, dry.stderr);
    for (const args of [['--diff'], ['--diff', '--json']]) {
      const r = await runCli('mesh-host', ['apply', s.declare([{ type: 'file', id: 'secret', path: '/etc/secret.conf', content: `${SECRET} ${args.length}\n`, mode: '0600', take: true, sensitive: true }]), '--log-level', 'trace', ...args, ...s.flags]);
      expect(r.code, r.stderr).toBe(0);
      outputs.push(r.stdout, r.stderr);
    }
    expect(readFileSync(join(s.root, 'etc/secret.conf'), 'utf8')).toBe(`${SECRET} 2\n`);
    const reports = readdirSync(join(s.state, 'outbox')).map((f) => readFileSync(join(s.state, 'outbox', f), 'utf8'));
    expect(reports).toHaveLength(2);
    // The change itself says only that the content changes: no line counts, no sizes.
    const secret = JSON.parse(reports[1]!).steps.find((step: { resource: string }) => step.resource === 'secret');
    expect(secret.changes).toEqual([{ kind: 'content', sensitive: true }]);
    for (const text of [...outputs, ...reports]) {
      expect(text).not.toContain('hunter2');
      expect(text).not.toContain('old-secret');
    }
  });

  it('--detailed-exitcodes: 0 nothing changed, 2 changes applied or planned, 4 failures, 6 both', async () => {
    const s = setup();
    const ok = s.declare([{ type: 'file', id: 'a', path: '/etc/a.conf', content: 'a\n' }]);
    const code = async (decl: string, ...extra: string[]) => (await runCli('mesh-host', ['apply', decl, '--detailed-exitcodes', '--log-level', 'warn', ...extra, ...s.flags])).code;
    expect(await code(ok, '--dry-run')).toBe(2);
    expect(await code(ok)).toBe(2);
    expect(await code(ok)).toBe(0);
    expect(await code(ok, '--dry-run')).toBe(0);
    // A directory made immutable: the plan sees it there, the write into it fails at the apply.
    const locked = join(s.root, 'locked');
    mkdirSync(locked);
    execFileSync('chattr', ['+i', locked]);
    try {
      expect(await code(s.declare([{ type: 'file', id: 'a', path: '/etc/a.conf', content: 'a\n' }, { type: 'file', id: 'nowhere', path: '/locked/x', content: '' }]))).toBe(4);
      expect(await code(s.declare([{ type: 'file', id: 'a', path: '/etc/a.conf', content: 'b\n' }, { type: 'file', id: 'nowhere', path: '/locked/x', content: '' }]))).toBe(6);
      // The failed step says the declared path and the system's reason, never the descriptor path the write went through.
      const failed = await runCli('mesh-host', ['apply', s.declare([{ type: 'file', id: 'nowhere', path: '/locked/x', content: '' }]), '--json', '--log-level', 'warn', ...s.flags]);
      const step = (JSON.parse(failed.stdout) as { report: { steps: Array<{ resource: string; detail?: string }> } }).report.steps.find((x) => x.resource === 'nowhere');
      expect(step?.detail).toBe('could not write /locked/x (EPERM: operation not permitted)');
    } finally {
      execFileSync('chattr', ['-i', locked]);
    }
    // Without the flag: the usual statuses.
    expect((await runCli('mesh-host', ['apply', s.declare([{ type: 'file', id: 'a', path: '/etc/a.conf', content: 'c\n' }]), '--log-level', 'warn', ...s.flags])).code).toBe(0);
  });
});
