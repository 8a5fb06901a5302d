import type { CommandContext } from '../context.js';
import { hostPaths } from '../host.js';

/** `mesh-host run`: the daemon. SIGTERM/SIGINT stop it, SIGUSR1 stands it aside, SIGUSR2 resumes, SIGHUP moves it. */
export async function runCommand(ctx: CommandContext): Promise<number> {
  const { runDaemon } = await import('../../daemon/daemon.js');
  // A fault the daemon did not foresee ends it as one fatal line in the journal, not a stack of
  // minified source; the unit starts it again, and the outbox and the kept declaration carry on.
  process.once('uncaughtException', (err) => {
    ctx.log.fatal({ err }, `mesh-host run: an unforeseen fault ends the daemon: ${err.message}`);
    process.exit(70);
  });
  const { code } = await runDaemon({ paths: hostPaths(ctx), log: ctx.log, clock: ctx.clock, runner: ctx.runner });
  // The NATS client and timers are closed; end even if a stray handle lingers.
  setTimeout(() => process.exit(code), 200).unref();
  return code;
}
