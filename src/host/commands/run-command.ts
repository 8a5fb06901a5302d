import { resolve } from 'node:path';
import { usageError } from '../../core/system/errors.js';
import { stringFlag, type CommandContext } from '../../cli/context.js';
import { hostPaths } from './with-host.js';
import { keepHeapSmall } from '../../core/system/memory.js';
import type { GenesisOrder } from '../daemon/daemon.js';

/**
 * `mesh-host run [--bundle FILE --mode adopted|converged]`: the daemon. SIGTERM/SIGINT stop it,
 * SIGUSR1 stands it aside, SIGUSR2 resumes, SIGHUP moves it. Given a bundle, a machine that is not
 * enrolled enrols itself through the one genesis path, so that its unit alone can enrol it.
 */
export async function runCommand(ctx: CommandContext): Promise<number> {
  keepHeapSmall();
  const bundlePath = stringFlag(ctx.flags, 'bundle');
  const mode = stringFlag(ctx.flags, 'mode');
  if (bundlePath === undefined && mode !== undefined) throw usageError("'run --mode' goes with --bundle FILE");
  let genesis: GenesisOrder | undefined;
  if (bundlePath !== undefined) {
    if (mode !== 'adopted' && mode !== 'converged') throw usageError("'run --bundle' needs --mode adopted or --mode converged");
    genesis = { bundlePath: resolve(bundlePath), mode };
  }
  const [{ runDaemon }, { launcherPipeOf, TRIAL_ENV }, { buildFault }] = await Promise.all([import('../daemon/daemon.js'), import('../release/pipe.js'), import('../release/fault.js')]);
  if (buildFault() === 'start') {
    ctx.log.fatal('this test build fails at start (built with --fault start)');
    return 70;
  }
  // A fault the daemon did not foresee ends it as one fatal line in the journal, not a stack of
  // minified source; the unit starts it again, and the outbox and the kept declaration carry on.
  process.once('uncaughtException', (err) => {
    ctx.log.fatal({ err }, `mesh-host run: an unforeseen fault ends the daemon: ${err.message}`);
    process.exit(70);
  });
  const paths = hostPaths(ctx);
  // Started by `mesh-host launch`: the pipe it handed down, and the release on trial if this is one.
  const pipe = launcherPipeOf(process.env, ctx.log);
  const trial = process.env[TRIAL_ENV];
  const launcher = pipe ? { pipe, ...(trial ? { trial } : {}) } : undefined;
  const level = stringFlag(ctx.flags, 'log-level');
  const watchStalls = level === 'debug' || level === 'trace';
  const { code } = await runDaemon({ paths, log: ctx.log, clock: ctx.clock, runner: ctx.runner, watchStalls, ...(genesis ? { genesis } : {}), ...(launcher ? { launcher } : {}) });
  pipe?.close();
  // The NATS client and timers are closed; end even if a stray handle lingers.
  setTimeout(() => process.exit(code), 200).unref();
  return code;
}
