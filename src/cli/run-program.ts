import { parseCommandLine, usage, type ProgramSpec } from './args.js';
import { EXIT, HostError } from '../core/system/errors.js';
import { versionLine } from '../host/release/version.js';
import type { CommandContext } from './context.js';

export type Command = (ctx: CommandContext) => Promise<number>;
/** Commands load lazily, so `--version` and `--help` import nothing heavy. */
export type CommandTable = Record<string, () => Promise<Command>>;

/** Parses, dispatches, and turns every ending into an exit status. Sets process.exitCode; never exits abruptly. */
export async function runProgram(spec: ProgramSpec, commands: CommandTable, argv: readonly string[]): Promise<number> {
  // Whoever read the output stopped (`meshctl reports | head`): end quietly, as a command killed by
  // SIGPIPE does, instead of a stack trace on the terminal.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(process.exitCode ?? 0);
  });
  const code = await dispatch(spec, commands, argv);
  process.exitCode = code;
  return code;
}

async function dispatch(spec: ProgramSpec, commands: CommandTable, argv: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseCommandLine(spec, argv);
  } catch (err) {
    if (err instanceof HostError) {
      process.stderr.write(`${spec.name}: ${err.message}\n${usage(spec, commandIn(spec, argv))}\n`);
      return err.exitCode;
    }
    throw err;
  }
  if (parsed.kind === 'help') {
    process.stdout.write(`${usage(spec, parsed.command)}\n`);
    return EXIT.ok;
  }
  if (parsed.kind === 'version') {
    process.stdout.write(`${versionLine(spec.name)}\n`);
    return EXIT.ok;
  }
  const json = parsed.flags.json === true;
  const load = Object.hasOwn(commands, parsed.command) ? commands[parsed.command] : undefined;
  if (!load) {
    process.stderr.write(`${spec.name}: '${parsed.command}' is not implemented yet\n`);
    return EXIT.usage;
  }
  const [{ createLogger, LOG_LEVELS }, { systemRunner }, { systemClock }] = await Promise.all([
    import('../core/system/log.js'),
    import('../core/system/runner.js'),
    import('../core/system/clock.js'),
  ]);
  const level = typeof parsed.flags['log-level'] === 'string' ? parsed.flags['log-level'] : 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    process.stderr.write(`${spec.name}: --log-level must be one of ${LOG_LEVELS.join(', ')}\n${usage(spec, parsed.command)}\n`);
    return EXIT.usage;
  }
  // A command's stdout is only its output (a plan, a report, one JSON document under --json): its logs
  // go to stderr. The daemon has no output but its logs, JSON lines on stdout for the journal.
  const stream = spec.commands[parsed.command]!.logsToStdout && !json ? 'stdout' : 'stderr';
  const log = await createLogger({ level, stream, pretty: Boolean(process[stream].isTTY), name: spec.name });
  const ctx: CommandContext = {
    args: parsed.args,
    flags: parsed.flags,
    json,
    log,
    runner: systemRunner(),
    clock: systemClock,
    print: (text) => void process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  };
  try {
    const command = await load();
    return await command(ctx);
  } catch (err) {
    if (err instanceof HostError) {
      const lines = [err.message, ...err.details.map((d) => `  ${d}`)];
      process.stderr.write(`${spec.name}: ${lines.join('\n')}\n`);
      if (json) ctx.print(JSON.stringify({ error: { message: err.message, details: err.details, exit: err.exitCode, ...(err.subjects.length ? { subjects: err.subjects } : {}) } }, null, 2));
      return err.exitCode;
    }
    log.fatal({ err }, 'unexpected failure');
    process.stderr.write(`${spec.name}: unexpected failure: ${(err as Error).stack ?? String(err)}\n`);
    return EXIT.failed;
  }
}

function commandIn(spec: ProgramSpec, argv: readonly string[]): string | undefined {
  return argv.find((a) => Object.hasOwn(spec.commands, a));
}
