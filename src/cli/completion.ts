import { EXIT, usageError } from '../core/system/errors.js';
import type { OptionSpec, ProgramSpec } from './args.js';
import type { CommandContext } from './context.js';

/**
 * Bash completion for a program, made from the same spec as its --help and its man page: the commands,
 * each command's options (its own and the program's globals), the values an option takes (its choices,
 * files or folders), and the files a command's arguments name.
 */

export const COMPLETION_SHELLS = ['bash'] as const;

/** What completes the value of a string option: its choices, a file, a folder, or nothing (a name, a count). */
function valueKind(option: OptionSpec): { words: readonly string[] } | 'file' | 'dir' | 'none' {
  if (option.choices) return { words: option.choices };
  if (option.value === 'FILE' || option.value === 'PATH') return 'file';
  if (option.value === 'DIR') return 'dir';
  return 'none';
}

/** A word list for bash, single-quoted (no name or choice holds a quote; refused if one ever does). */
function quoted(words: readonly string[]): string {
  const text = words.join(' ');
  if (text.includes("'")) throw new Error(`a completion word holds a quote: ${text}`);
  return `'${text}'`;
}

/** The script `PROGRAM completion bash` prints: source it, or put it in /etc/bash_completion.d/PROGRAM. */
export function bashCompletion(spec: ProgramSpec): string {
  const fn = `_${spec.name.replace(/[^A-Za-z0-9]/g, '_')}_complete`;
  const commands = Object.keys(spec.commands);
  const strings = Object.entries(spec.options).filter(([, o]) => o.type === 'string');
  const byKind = (kind: 'file' | 'dir' | 'none') => strings.filter(([, o]) => valueKind(o) === kind).map(([n]) => `--${n}`);
  const choiceCases = strings.flatMap(([name, o]) => {
    const kind = valueKind(o);
    return typeof kind === 'object' ? [`    --${name}) COMPREPLY=($(compgen -W ${quoted(kind.words)} -- "$cur")); return 0 ;;`] : [];
  });
  const optionCases = Object.entries(spec.commands).map(
    ([name, c]) => `    ${name}) opts=${quoted([...c.options, ...spec.globals, 'help'].map((o) => `--${o}`))} ;;`,
  );
  const argCases = Object.entries(spec.commands).flatMap(([name, c]) => {
    const choices = Object.values(c.argChoices ?? {}).flat();
    return choices.length ? [`    ${name}) COMPREPLY=($(compgen -W ${quoted(choices)} -- "$cur")); return 0 ;;`] : [];
  });
  const alternatives = (names: string[]) => (names.length ? names.join('|') : '--mesh-host-none');
  return [
    `# bash completion for ${spec.name}, made from its own command-line definition: \`${spec.name} completion bash\``,
    `${fn}() {`,
    '  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} command="" i=1 word opts',
    `  local takes_value=' ${strings.map(([n]) => `--${n}`).join(' ')} '`,
    "  # The command: the first word after the program that is neither a flag nor a flag's value (flags may stand anywhere).",
    '  while [ "$i" -lt "$COMP_CWORD" ]; do',
    '    word=${COMP_WORDS[i]}',
    '    case "$word" in',
    '      --*=*) ;;',
    '      --*) [[ "$takes_value" == *" $word "* ]] && i=$((i + 1)) ;;',
    '      *) [ -n "$command" ] || command=$word ;;',
    '    esac',
    '    i=$((i + 1))',
    '  done',
    '  case "$prev" in',
    ...choiceCases,
    `    ${alternatives(byKind('file'))}) COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null; return 0 ;;`,
    `    ${alternatives(byKind('dir'))}) COMPREPLY=($(compgen -d -- "$cur")); compopt -o filenames 2>/dev/null; return 0 ;;`,
    `    ${alternatives(byKind('none'))}) COMPREPLY=(); return 0 ;;`,
    '  esac',
    '  if [[ "$cur" == -* ]]; then',
    '    case "$command" in',
    ...optionCases,
    `    *) opts=${quoted([...spec.globals, 'help', 'version'].map((o) => `--${o}`))} ;;`,
    '    esac',
    '    COMPREPLY=($(compgen -W "$opts" -- "$cur"))',
    '    return 0',
    '  fi',
    '  if [ -z "$command" ]; then',
    `    COMPREPLY=($(compgen -W ${quoted(commands)} -- "$cur"))`,
    '    return 0',
    '  fi',
    '  case "$command" in',
    ...argCases,
    '  esac',
    '  COMPREPLY=($(compgen -f -- "$cur"))',
    '  compopt -o filenames 2>/dev/null',
    '  return 0',
    '}',
    `complete -F ${fn} ${spec.name}`,
    '',
  ].join('\n');
}

/** The completion script for SHELL (the one argument of `completion`); any other shell is a usage error. */
export function completionScript(spec: ProgramSpec, shell: string | undefined): string {
  if (shell !== 'bash') throw usageError(`completion: '${shell ?? ''}' is not a shell ${spec.name} completes for (${COMPLETION_SHELLS.join(', ')})`);
  return bashCompletion(spec);
}

/** `PROGRAM completion SHELL`: prints the script. */
export function completionCommand(spec: ProgramSpec): (ctx: CommandContext) => Promise<number> {
  return (ctx) => {
    ctx.print(completionScript(spec, ctx.args[0]));
    return Promise.resolve(EXIT.ok);
  };
}
