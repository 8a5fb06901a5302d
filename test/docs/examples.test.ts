import { describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseCommandLine } from '../../src/cli/args.js';
import { meshctlProgram, meshHostProgram } from '../../src/cli/programs.js';
import { validateDeclaration } from '../../src/core/declaration/validate.js';
import { HostMetrics } from '../../src/host/metrics/metrics.js';
import { projectDir, runCli } from '../support/cli.js';
import { scratch } from '../support/tree.js';

/**
 * The examples of the documentation are run, so that they cannot go stale: every command line of a `sh`
 * block names a command and flags the programs have; every declaration of a `json` block is valid, and
 * applies (a dry run) on a scratch tree; every metric named exists.
 */
const pages = ['README.md', ...readdirSync(join(projectDir, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const text = (page: string) => readFileSync(join(projectDir, page), 'utf8');
const blocks = (page: string, lang: string) => [...text(page).matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!);
const programs = { 'mesh-host': meshHostProgram, meshctl: meshctlProgram } as const;

/** Splits a shell line into words, quotes respected; `VAR=x`, pipes and redirections end the command. */
function words(line: string): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) {
    const word = m[1] ?? m[2] ?? m[3]!;
    if (m[3] && /^(\||>|2>|&&|;|#)/.test(word)) break;
    out.push(word);
  }
  return out;
}

const commandLines = pages.flatMap((page) =>
  blocks(page, 'sh').flatMap((block) =>
    block.split('\n').flatMap((raw) => {
      const line = raw.trim().replace(/^\.\/bin\//, '');
      const program = /^(mesh-host|meshctl)\s/.exec(line)?.[1] as keyof typeof programs | undefined;
      return program ? [{ page, line, program, argv: words(line).slice(1) }] : [];
    }),
  ),
);

const declarations = pages.flatMap((page) =>
  blocks(page, 'json').flatMap((block) => {
    const value = JSON.parse(block) as { version?: number };
    return value.version === 1 ? [{ page, value }] : [];
  }),
);

describe('the examples in the documentation', () => {
  it('there are examples to check', () => {
    expect(commandLines.length).toBeGreaterThan(10);
    expect(declarations.length).toBeGreaterThanOrEqual(2);
  });

  it.each(commandLines.map((c) => [`${c.page}: ${c.line}`, c] as const))('%s parses', (_name, c) => {
    const parsed = parseCommandLine(programs[c.program], c.argv);
    expect(parsed.kind === 'command' || parsed.kind === 'version').toBe(true);
  });

  it.each(declarations.map((d, i) => [`${d.page} #${i + 1}`, d] as const))('the declaration of %s is valid and plans on a scratch tree', async (_name, d) => {
    const validated = await validateDeclaration(d.value);
    expect(validated.ok ? [] : validated.problems).toEqual([]);
    // Services need a service manager this machine does not run as PID 1: planned without them.
    const s = scratch('mesh-host-docs-');
    try {
      const value = d.value as { node: string; resources: Array<{ type: string }> };
      const decl = join(s.dir, 'decl.json');
      writeFileSync(decl, JSON.stringify({ ...value, resources: value.resources.filter((r) => r.type !== 'service') }));
      writeFileSync(join(s.dir, 'host.json'), JSON.stringify({ node: value.node }));
      // The machine an example is written for: the directories it holds already (fail2ban's /etc/fail2ban,
      // say) are there; the plan refuses a path whose directory neither the machine nor the declaration makes.
      const declared = new Set((value.resources as Array<{ type: string; path?: string }>).flatMap((r) => (r.type === 'directory' && r.path ? [r.path] : [])));
      mkdirSync(join(s.dir, 'root'), { recursive: true });
      for (const r of value.resources as Array<{ path?: string }>) {
        const parent = r.path?.slice(0, r.path.lastIndexOf('/'));
        if (parent && !declared.has(parent)) mkdirSync(join(s.dir, 'root', parent), { recursive: true });
      }
      const r = await runCli('mesh-host', ['apply', decl, '--dry-run', '--diff', '--root', join(s.dir, 'root'), '--state-dir', join(s.dir, 'state'), '--config', join(s.dir, 'host.json'), '--log-level', 'warn']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^plan: \d+ of \d+ steps? to take/);
      // A sensitive file's content shows in no diff.
      for (const res of value.resources as Array<{ type: string; sensitive?: boolean; content?: string }>) {
        if (res.sensitive && res.content) expect(r.stdout).not.toContain(res.content.trim());
      }
    } finally {
      s.cleanup();
    }
  });

  it('every metric the documentation names is one the host exports', async () => {
    const metrics = await HostMetrics.create({ outboxWaiting: () => 0, lastReport: () => ({ sequence: 1, at: new Date().toISOString() }), refusals: () => ({ stale: 1 }), linkUp: () => true, now: () => Date.now() }, { node: 'n' });
    metrics.applied('delivery', 'converged', 0.1);
    metrics.driftFound('unit');
    const exported = new Set([...(await metrics.render()).matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!));
    const named = new Set(pages.flatMap((page) => [...text(page).matchAll(/`(mesh_host_[a-z_]+)/g)].map((m) => m[1]!)));
    expect(named.size).toBeGreaterThan(5);
    for (const name of named) expect(exported, name).toContain(name);
  });
});
