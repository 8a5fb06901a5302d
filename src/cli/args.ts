import { parseArgs } from 'node:util';
import { usageError } from '../core/system/errors.js';

export interface OptionSpec {
  type: 'boolean' | 'string';
  /** One line for --help. */
  help: string;
  /** Shown in usage for string options, e.g. DIR. */
  value?: string;
  /** A string option that may be given more than once (`--label a=1 --label b=2`): its value is then a list. */
  multiple?: boolean;
  /** The only values it takes, offered by shell completion and listed in the man page. */
  choices?: readonly string[];
}

export interface CommandSpec {
  summary: string;
  /** Positional arguments, in order; a trailing '?' marks an optional one, a trailing '…' a last one that takes the rest. */
  args: string[];
  /** Option names (beyond the program's globals) this command accepts. */
  options: string[];
  /** Its logs are JSON lines on stdout, for the journal (the daemon); every other command logs to stderr. */
  logsToStdout?: boolean;
  /** The only values a positional argument takes, by its name in `args` (offered by shell completion). */
  argChoices?: Record<string, readonly string[]>;
}

export interface ProgramSpec {
  name: string;
  summary: string;
  /** Every option either program knows, by long name. */
  options: Record<string, OptionSpec>;
  /** Options every command accepts. */
  globals: string[];
  commands: Record<string, CommandSpec>;
}

export type Flags = Record<string, string | boolean | string[] | undefined>;

export type Parsed =
  | { kind: 'help'; command?: string }
  | { kind: 'version' }
  | { kind: 'command'; command: string; args: string[]; flags: Flags };

/**
 * Parses a whole command line at once, so flags may stand anywhere: before the subcommand, between
 * its arguments or after them. Anything not in the vocabulary is refused rather than dropped.
 */
export function parseCommandLine(spec: ProgramSpec, argv: readonly string[]): Parsed {
  const options: Record<string, { type: 'boolean' | 'string'; multiple?: boolean }> = {
    help: { type: 'boolean' },
    version: { type: 'boolean' },
  };
  for (const [name, option] of Object.entries(spec.options)) options[name] = { type: option.type, ...(option.multiple ? { multiple: true } : {}) };

  let values: Flags;
  let positionals: string[];
  try {
    const parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals: true });
    // Only string options are ever multiple: a list is a list of strings.
    values = parsed.values as Flags;
    positionals = parsed.positionals;
  } catch (err) {
    throw usageError(describeParseError(err));
  }

  const [command, ...args] = positionals;
  if (command !== undefined && !Object.hasOwn(spec.commands, command)) {
    const near = closest(command, Object.keys(spec.commands));
    throw usageError(`unknown command '${command}'${near ? ` (did you mean '${near}'?)` : ''}`);
  }
  if (values.help) return command === undefined ? { kind: 'help' } : { kind: 'help', command };
  if (values.version) return { kind: 'version' };
  if (command === undefined) throw usageError('no command given');

  const commandSpec = spec.commands[command]!;
  const allowed = new Set([...spec.globals, ...commandSpec.options]);
  for (const name of Object.keys(values)) {
    if (!allowed.has(name)) throw usageError(`--${name} is not an option of '${command}'`);
  }
  const required = commandSpec.args.filter((a) => !a.endsWith('?'));
  if (args.length < required.length) {
    throw usageError(`'${command}' needs ${required.slice(args.length).join(', ')}`);
  }
  if (args.length > commandSpec.args.length && !commandSpec.args.at(-1)?.endsWith('…')) {
    throw usageError(`unexpected argument '${args[commandSpec.args.length]}' for '${command}'`);
  }
  return { kind: 'command', command, args, flags: values };
}

function describeParseError(err: unknown): string {
  const e = err as { code?: string; message?: string };
  const quoted = /'([^']+)'/.exec(e.message ?? '')?.[1];
  switch (e.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option '${quoted ?? '?'}'`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return (e.message ?? 'invalid option value').split('.')[0]!.replace(/^Option /, 'option ');
    default:
      return e.message ?? String(err);
  }
}

function closest(word: string, candidates: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of candidates) {
    const d = editDistance(word, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The usage text of a program, or of one of its commands. */
export function usage(spec: ProgramSpec, command?: string): string {
  const optionLine = (name: string) => {
    const o = spec.options[name]!;
    const left = `  --${name}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`;
    return `${left.padEnd(26)} ${o.help}`;
  };
  if (command !== undefined) {
    const c = spec.commands[command]!;
    const args = c.args.map((a) => (a.endsWith('?') ? `[${a.slice(0, -1)}]` : a)).join(' ');
    return [
      `usage: ${spec.name} ${command}${args ? ` ${args}` : ''} [options]`,
      '',
      c.summary,
      '',
      'options:',
      ...c.options.map(optionLine),
      ...spec.globals.map(optionLine),
      '  --help                   this text',
    ].join('\n');
  }
  const width = Math.max(...Object.keys(spec.commands).map((c) => c.length));
  return [
    `usage: ${spec.name} COMMAND [ARGS] [options]`,
    '',
    spec.summary,
    '',
    'commands:',
    ...Object.entries(spec.commands).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    '',
    'options for every command:',
    ...spec.globals.map(optionLine),
    '  --help                   help for a command',
    '  --version                the version',
  ].join('\n');
}
