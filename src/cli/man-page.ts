import { EXIT } from '../core/system/errors.js';
import type { OptionSpec, ProgramSpec } from './args.js';

/**
 * A program's man page (roff, man macros), made from the same spec as its --help: every command with its
 * arguments, summary and options, the options every command takes, the exit statuses. The build writes
 * one for each program (dist/man/PROGRAM.1).
 */

/** What each exit status means, in the words of errors.ts's EXIT. */
const EXIT_MEANINGS: Record<keyof typeof EXIT, string> = {
  ok: 'done: converged, or a dry run that planned',
  failed: 'the apply failed (the report names the step), or a node failed or is silent',
  usage: 'usage: an unknown command or flag, a missing or stray argument',
  refused: 'refused before anything was touched',
  cannotStart: 'cannot start (the store cannot be read)',
};

/** Text made safe for roff: backslashes and hyphens escaped, other than ASCII named by code point, no line begins with a control character. */
function roff(text: string): string {
  return text
    .replace(/\\/g, '\\e')
    .replace(/-/g, '\\-')
    .replace(/[^ -~\n\t]/gu, (c) => `\\[u${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}]`)
    .split('\n')
    .map((line) => (/^[.']/.test(line) ? `\\&${line}` : line))
    .join('\n');
}

function optionEntry(name: string, option: OptionSpec): string[] {
  const value = option.type === 'string' ? ` \\fI${roff(option.value ?? 'VALUE')}\\fR` : '';
  const choices = option.choices ? ` (one of: ${option.choices.join(', ')})` : '';
  const again = option.multiple ? ' May be given more than once.' : '';
  return ['.TP', `.B \\-\\-${roff(name)}${value}`, `${roff(option.help)}${roff(choices)}.${again}`];
}

function argumentText(args: string[]): string {
  return args.map((a) => (a.endsWith('?') ? `[\\fI${roff(a.slice(0, -1))}\\fR]` : `\\fI${roff(a)}\\fR`)).join(' ');
}

export interface ManPageInfo {
  /** The version the page documents (the build's). */
  version: string;
  /** The page's date, YYYY-MM-DD (the commit's, for a reproducible page). */
  date: string;
}

export function manPage(spec: ProgramSpec, info: ManPageInfo): string {
  const title = spec.name.toUpperCase();
  const lines = [
    `.TH ${roff(title)} 1 "${info.date}" "mesh\\-host ${roff(info.version)}" "User Commands"`,
    // Words are never broken: a flag or a path cut at a hyphen would read as another.
    '.nh',
    '.ad l',
    '.SH NAME',
    `${roff(spec.name)} \\- ${roff(spec.summary)}`,
    '.SH SYNOPSIS',
    `.B ${roff(spec.name)}`,
    '\\fICOMMAND\\fR [\\fIARGS\\fR] [\\fIoptions\\fR]',
    '.br',
    `.B ${roff(spec.name)}`,
    '\\fICOMMAND\\fR \\-\\-help',
    '.SH DESCRIPTION',
    roff(spec.summary),
    '.PP',
    'Flags may stand anywhere on the line. An unknown flag, a mistyped command, a missing or a stray argument is refused with exit 2, a one\\-line reason and the usage.',
    '.SH COMMANDS',
  ];
  for (const [name, command] of Object.entries(spec.commands)) {
    lines.push('.TP', `.B ${roff(name)}${command.args.length ? ` ${argumentText(command.args)}` : ''}`, `${roff(command.summary)}.`);
    if (command.options.length > 0) {
      lines.push('.RS');
      for (const option of command.options) lines.push(...optionEntry(option, spec.options[option]!));
      lines.push('.RE');
    }
  }
  lines.push('.SH OPTIONS', 'Every command takes these.');
  for (const option of spec.globals) lines.push(...optionEntry(option, spec.options[option]!));
  lines.push('.TP', '.B \\-\\-help', 'The usage of the program, or of a command.', '.TP', '.B \\-\\-version', 'The version and the commit it was built from.');
  lines.push('.SH "EXIT STATUS"');
  for (const [key, code] of Object.entries(EXIT) as Array<[keyof typeof EXIT, number]>) lines.push('.TP', `.B ${code}`, roff(EXIT_MEANINGS[key]));
  lines.push(
    '.SH "SHELL COMPLETION"',
    `\\fBsource <(${roff(spec.name)} completion bash)\\fR, or its output written to \\fI/etc/bash_completion.d/${roff(spec.name)}\\fR.`,
    '.SH "SEE ALSO"',
    spec.name === 'meshctl' ? '\\fBmesh\\-host\\fR(1)' : '\\fBmeshctl\\fR(1)',
    '.PP',
    "The project's docs/reference.md (every command and flag in prose), docs/operator.md (running a fleet).",
    '',
  );
  return lines.join('\n');
}
