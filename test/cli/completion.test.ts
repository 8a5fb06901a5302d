import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { meshHostProgram, meshctlProgram } from '../../src/cli/programs.js';
import { systemRunner } from '../../src/core/system/runner.js';
import { runCli } from '../support/cli.js';
import { scratch } from '../support/tree.js';

/**
 * `meshctl completion bash` and `mesh-host completion bash`, as printed by the built programs, sourced into
 * a real bash and asked what it offers at each point of a command line (COMP_WORDS, COMP_CWORD, the
 * function `complete -p` names), in a folder holding a file and a folder to complete.
 */
const programs = { meshctl: meshctlProgram, 'mesh-host': meshHostProgram } as const;
type Program = keyof typeof programs;

describe('bash completion', () => {
  const scripts = {} as Record<Program, string>;
  let work: ReturnType<typeof scratch>;

  beforeAll(async () => {
    work = scratch('mesh-host-completion-');
    mkdirSync(join(work.dir, 'keys'));
    writeFileSync(join(work.dir, 'decl.json'), '{}');
    for (const program of Object.keys(programs) as Program[]) {
      const run = await runCli(program, ['completion', 'bash']);
      expect(run.code, run.stderr).toBe(0);
      scripts[program] = join(work.dir, `${program}.bash`);
      writeFileSync(scripts[program], run.stdout);
    }
  });
  afterAll(() => work?.cleanup());

  /** What bash offers for `line` (the cursor at its end; a trailing space starts a new word). */
  async function offered(program: Program, line: string): Promise<string[]> {
    const words = line.split(' ');
    const script = [
      `cd ${work.dir} && source ${scripts[program]}`,
      `COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')})`,
      `COMP_CWORD=${words.length - 1}`,
      `COMP_LINE='${line}'; COMP_POINT=${line.length}`,
      `fn=$(complete -p ${program} | sed -n 's/.*-F \\([^ ]*\\) .*/\\1/p')`,
      '"$fn" && printf "%s\\n" "${COMPREPLY[@]}"',
    ].join('\n');
    const run = await systemRunner().run('bash', ['-c', script], { timeoutMs: 10_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe('');
    return run.stdout.split('\n').filter(Boolean).sort();
  }

  it('offers every command of each program, as its spec lists them', async () => {
    for (const program of Object.keys(programs) as Program[]) {
      expect(await offered(program, `${program} `)).toEqual(Object.keys(programs[program].commands).sort());
    }
    expect(await offered('meshctl', 'meshctl se')).toEqual(['send', 'serve']);
  });

  it("offers a command's own options and the program's globals, wherever the command stands on the line", async () => {
    const send = meshctlProgram.commands.send!;
    expect(await offered('meshctl', 'meshctl send --')).toEqual([...send.options, ...meshctlProgram.globals, 'help'].map((o) => `--${o}`).sort());
    expect(await offered('meshctl', 'meshctl send --se')).toEqual(['--select', '--server']);
    // A flag's value is not taken for the command: --log-level warn comes before it.
    expect(await offered('meshctl', 'meshctl --log-level warn plan --d')).toEqual(['--diff']);
    expect(await offered('mesh-host', 'mesh-host apply --dry')).toEqual(['--dry-run']);
    // Before any command: the globals, --help and --version.
    expect(await offered('mesh-host', 'mesh-host --ver')).toEqual(['--version']);
  });

  it("offers an option's choices, files for a FILE, folders for a DIR, and nothing for a name", async () => {
    expect(await offered('mesh-host', 'mesh-host genesis b.json --mode ')).toEqual(['adopted', 'converged']);
    expect(await offered('mesh-host', 'mesh-host chart --format ')).toEqual(['dot', 'json', 'mermaid']);
    expect(await offered('meshctl', 'meshctl status --log-level w')).toEqual(['warn']);
    expect(await offered('meshctl', 'meshctl sign x --key ')).toEqual(['decl.json', 'keys', 'meshctl.bash', 'mesh-host.bash'].sort());
    expect(await offered('mesh-host', 'mesh-host apply x --state-dir ')).toEqual(['keys']);
    expect(await offered('meshctl', 'meshctl send --node ')).toEqual([]);
  });

  it("offers files for a command's arguments, and the shells for completion's", async () => {
    expect(await offered('mesh-host', 'mesh-host apply de')).toEqual(['decl.json']);
    expect(await offered('meshctl', 'meshctl completion ')).toEqual(['bash']);
  });

  it('refuses a shell it does not complete for, with exit 2 and the shells it does', async () => {
    const run = await runCli('meshctl', ['completion', 'fish']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("'fish' is not a shell meshctl completes for (bash)");
    expect(run.stdout).toBe('');
  });
});
