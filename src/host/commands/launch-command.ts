import { loadConfig } from '../../core/config/config.js';
import { ensureStateDir } from '../../core/store/store.js';
import { acquireLock } from '../../core/store/store-lock.js';
import type { CommandContext } from '../../cli/context.js';
import { hostPaths } from './with-host.js';

/** The launcher's own lock beside the state: a second launcher is refused, naming the first. */
export const LAUNCHER_LOCK = 'launch.lock';

/**
 * `mesh-host launch`: what the service runs. It runs the current release's `mesh-host run` and tries a
 * release the mesh names on trial. SIGTERM/SIGINT stop it and its hosts between applies; SIGHUP is
 * passed to the serving host.
 */
export async function launchCommand(ctx: CommandContext): Promise<number> {
  const [{ Launcher }, { processStarter }, { releaseLayout }, { releaseKeysOf }, { HeldTrust }] = await Promise.all([
    import('../release/launch.js'),
    import('../release/host-process.js'),
    import('../release/layout.js'),
    import('../release/verify-release.js'),
    import('../env/held-trust.js'),
  ]);
  const paths = hostPaths(ctx);
  const { config } = loadConfig(paths.configPath);
  ensureStateDir(paths.stateDir);
  const lock = await acquireLock(paths.stateDir, { command: 'mesh-host launch', file: LAUNCHER_LOCK, timeoutMs: 0 });
  // The host is run with the same paths and log level as the launcher.
  const args = ['--state-dir', paths.stateDir, '--config', paths.configPath, '--root', paths.root, '--log-level', typeof ctx.flags['log-level'] === 'string' ? ctx.flags['log-level'] : 'info'];
  const launcher = new Launcher({
    layout: releaseLayout(paths.root),
    stateDir: paths.stateDir,
    log: ctx.log,
    runner: ctx.runner,
    startHost: processStarter(args, ctx.log),
    // A trust root that pins no release keys leaves a release to the digest its declaration gives.
    releaseKeys: () => releaseKeysOf(new HeldTrust(paths.stateDir, config.publicKey).newest()),
    ...(config.trialTimeoutMs ? { trialTimeoutMs: config.trialTimeoutMs } : {}),
  });
  const onStop = () => launcher.stop();
  const onReload = () => launcher.reload();
  process.on('SIGTERM', onStop);
  process.on('SIGINT', onStop);
  process.on('SIGHUP', onReload);
  try {
    const code = await launcher.run();
    await stopUnderOpenrc(ctx, code);
    return code;
  } finally {
    process.off('SIGTERM', onStop);
    process.off('SIGINT', onStop);
    process.off('SIGHUP', onReload);
    lock.release();
  }
}

/**
 * OpenRC's supervise-daemon starts again whatever ends, whatever its status: a host that ended needing an
 * operator (exit 2 or 4) would be restarted for ever. So the launcher asks OpenRC to stop the service and
 * waits for the TERM that stop sends, as systemd's RestartPreventExitStatus does by itself.
 */
async function stopUnderOpenrc(ctx: CommandContext, code: number): Promise<void> {
  const service = process.env.MESH_HOST_OPENRC_SERVICE;
  if ((code !== 2 && code !== 4) || !service) return;
  const { spawn } = await import('node:child_process');
  ctx.log.error({ service, code }, `the host needs an operator (exit ${code}): the OpenRC service ${service} is stopped, not restarted`);
  spawn('rc-service', [service, 'stop'], { detached: true, stdio: 'ignore' }).unref();
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 30_000);
    process.once('SIGTERM', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
