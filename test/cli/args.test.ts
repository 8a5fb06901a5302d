import { describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../src/cli/args.js';
import { meshHostProgram, meshctlProgram } from '../../src/cli/programs.js';
import { HostError } from '../../src/core/system/errors.js';

const parse = (...argv: string[]) => parseCommandLine(meshHostProgram, argv);
function refusal(fn: () => unknown): HostError {
  try {
    fn();
  } catch (err) {
    if (err instanceof HostError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('command line', () => {
  it('reads flags anywhere on the line', () => {
    const a = parse('apply', 'decl.json', '--dry-run');
    const b = parse('--dry-run', 'apply', 'decl.json');
    expect(a).toEqual(b);
    expect(a).toEqual({ kind: 'command', command: 'apply', args: ['decl.json'], flags: { 'dry-run': true } });
    expect(parse('inventory', '--json')).toEqual({ kind: 'command', command: 'inventory', args: [], flags: { json: true } });
    expect(parse('--json', 'inventory')).toEqual(parse('inventory', '--json'));
    expect(parse('apply', '--root', '/tmp/x', 'd.json', '--state-dir=/tmp/s')).toEqual({
      kind: 'command', command: 'apply', args: ['d.json'], flags: { root: '/tmp/x', 'state-dir': '/tmp/s' },
    });
  });

  it('refuses an unknown flag, a stray argument, a missing one and a mistyped command with exit 2', () => {
    for (const [argv, says] of [
      [['inventory', '--jsn'], "unknown option '--jsn'"],
      [['inventory', 'extra'], "unexpected argument 'extra'"],
      [['apply'], "'apply' needs FILE"],
      [['inventroy'], "did you mean 'inventory'"],
      [['inventory', '--dry-run'], '--dry-run is not an option of'],
      [['apply', 'f', '--root'], 'root'],
      [[], 'no command given'],
      [['toString'], "unknown command 'toString'"],
      [['__proto__'], "unknown command '__proto__'"],
    ] as const) {
      const err = refusal(() => parse(...argv));
      expect(err.exitCode, argv.join(' ')).toBe(2);
      expect(err.message).toContain(says);
    }
  });

  it('answers --help on every command and --version', () => {
    for (const command of Object.keys(meshHostProgram.commands)) {
      expect(parse(command, '--help')).toEqual({ kind: 'help', command });
    }
    expect(parse('--help')).toEqual({ kind: 'help' });
    expect(parse('--version')).toEqual({ kind: 'version' });
  });

  it('gives meshctl the same treatment', () => {
    const ctl = (...argv: string[]) => parseCommandLine(meshctlProgram, argv);
    expect(ctl('sign', 'd.json', '--key', 'k')).toEqual(ctl('--key', 'k', 'sign', 'd.json'));
    expect(refusal(() => ctl('sign', 'd.json', '--root', '/x')).message).toContain('--root is not an option');
    expect(refusal(() => ctl('sgn')).message).toContain("did you mean 'sign'");
    expect(ctl('keygen', '--help')).toEqual({ kind: 'help', command: 'keygen' });
  });
});
