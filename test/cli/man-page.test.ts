import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { usage } from '../../src/cli/args.js';
import { manPage } from '../../src/cli/man-page.js';
import { meshHostProgram, meshctlProgram } from '../../src/cli/programs.js';
import { EXIT } from '../../src/core/system/errors.js';
import { systemRunner } from '../../src/core/system/runner.js';
import { projectDir } from '../support/cli.js';

/**
 * The man pages the build writes (dist/man/PROGRAM.1), rendered by groff as `man` renders them: one for
 * each program, made from the same spec as --help, holding every command, option and exit status, with no
 * warning from groff.
 */
const specs = [meshHostProgram, meshctlProgram];

/** The page rendered to plain text, and what groff warned of (-ww: every warning). */
async function rendered(page: string): Promise<{ text: string; warnings: string }> {
  const run = await systemRunner().run('groff', ['-man', '-Tutf8', '-ww', '-P', '-cbou'], { input: page, timeoutMs: 20_000, env: { ...process.env, LC_ALL: 'C.UTF-8' } });
  expect(run.code, run.stderr).toBe(0);
  return { text: run.stdout.replace(/\u2010|\u2212/g, '-'), warnings: run.stderr };
}

describe.each(specs.map((spec) => [spec.name, spec] as const))('the man page of %s', (name, spec) => {
  const built = () => readFileSync(join(projectDir, 'dist/man', `${name}.1`), 'utf8');

  it('is written by the build, from the spec --help prints', () => {
    expect(built()).toBe(manPage(spec, { version: /mesh\\-host ([^"]+)"/.exec(built())![1]!.replace(/\\-/g, '-'), date: /^\.TH \S+ 1 "([^"]+)"/.exec(built())![1]! }));
  });

  it('renders without a warning, and holds every command with its arguments and summary, every option, every exit status', async () => {
    const { text, warnings } = await rendered(built());
    expect(warnings).toBe('');
    const flat = text.replace(/\s+/g, ' ');
    expect(flat).toContain(`${name} - ${spec.summary}`);
    for (const [command, c] of Object.entries(spec.commands)) {
      expect(flat).toContain(`${command}${c.args.length ? ' ' : ''}${c.args.map((a) => (a.endsWith('?') ? `[${a.slice(0, -1)}]` : a)).join(' ')} ${c.summary}.`);
      for (const option of c.options) expect(flat).toContain(`--${option}${spec.options[option]!.type === 'string' ? ` ${spec.options[option]!.value}` : ''} ${spec.options[option]!.help}`);
    }
    for (const option of spec.globals) expect(flat).toContain(`--${option}`);
    for (const code of Object.values(EXIT)) expect(text).toMatch(new RegExp(`^ +${code}\\s`, "m"));
    // --help's own words are the page's: the same summaries.
    for (const line of usage(spec).split('\n').filter((l) => /^ {2}[a-z]/.test(l))) expect(flat).toContain(line.trim().split(/\s{2,}/)[1]);
  });

  it('man itself opens it', async () => {
    const run = await systemRunner().run('man', ['-l', '-P', 'cat', join(projectDir, 'dist/man', `${name}.1`)], { timeoutMs: 20_000, env: { ...process.env, MANWIDTH: '100' } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('COMMANDS');
  });
});
