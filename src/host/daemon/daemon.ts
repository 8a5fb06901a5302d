import { createActor, toPromise } from 'xstate';
import { lifecycleMachine, type LifecycleActor } from '../../../machines/lifecycle.js';
import { watchLinkSettings } from '../../core/config/watch.js';
import { daemonImplementations } from './actors.js';
import { attachLauncher } from './launcher-seam.js';
import { daemonParts, type DaemonOptions, type DaemonParts } from './parts.js';
import { watchStalls } from './stall-watch.js';

export type { DaemonOptions, GenesisOrder } from './parts.js';

const SIGNALS: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGUSR1', 'SIGUSR2', 'SIGHUP'];

/**
 * `mesh-host run`: the lifecycle machine with the real actors and effects plugged in (host/daemon/actors.ts,
 * over the parts of host/daemon/parts.ts). It only wires: what to keep, what to refuse, what to apply next and
 * which report leaves next are the machine's decisions; the worker alone writes.
 */
export async function runDaemon(options: DaemonOptions): Promise<{ code: number; output: unknown }> {
  const { log } = options;
  const parts = await daemonParts(options);
  // The machine's delays (the grace, the retries, a pause's end) run on the daemon's clock.
  const clock = { setTimeout: (fn: () => void, ms: number) => options.clock.after(ms, fn), clearTimeout: (cancel: () => void) => cancel() };
  const actor = createActor(lifecycleMachine.provide(daemonImplementations(parts)), { clock, input: options.genesis ? { bundle: options.genesis } : {} });
  parts.bind(actor);
  const detach = attachAround(actor, parts);
  // Every daemon runs commands sooner or later (the links a report carries, an inventory's probes):
  // child_process and what it brings are loaded now, not at the first command, in the middle of an apply.
  void import('node:child_process');
  actor.start();
  log.info({ node: parts.now.config.node, servers: parts.now.config.servers }, 'mesh-host run: started');
  const output = (await toPromise(actor)) as { ending?: string; failure?: string; abandoned?: boolean };
  detach();
  await parts.metrics.close();
  if (output.failure) log.fatal({ failure: output.failure }, 'the host could not start');
  if (output.abandoned) log.warn('the apply in flight outlasted the grace and was left; the host stopped instead of standing aside or moving');
  log.info(output, 'mesh-host run: ended');
  return { code: output.failure ? 4 : 0, output };
}

/**
 * What speaks to the lifecycle from outside it: signals, an edit of the link settings (the host moves
 * to the bus they name, between applies), the launcher's pipe, the stall watch. Returns their detach.
 */
function attachAround(actor: LifecycleActor, parts: DaemonParts): () => void {
  const { paths, log, launcher } = parts.options;
  const onSignal = (signal: NodeJS.Signals) => {
    log.info({ signal }, 'signal');
    actor.send({ type: signal === 'SIGUSR1' ? 'STAND_ASIDE' : signal === 'SIGUSR2' ? 'RESUME' : signal === 'SIGHUP' ? 'MOVE' : 'STOP' });
  };
  for (const s of SIGNALS) process.on(s, onSignal);
  const settings = watchLinkSettings(paths.configPath, parts.now.config, log, (next) => {
    log.info({ servers: next.servers }, 'the link settings changed: moving to the new bus between applies');
    actor.send({ type: 'MOVE' });
  });
  parts.settings = settings;
  actor.subscribe({ error: (err) => log.error({ err }, 'lifecycle failed') });
  const head = () => parts.store.peek().head;
  const detachLauncher = launcher && attachLauncher(actor, { ...launcher, head, node: () => parts.now.config.node, log, report: (make) => parts.store.run('trial report', async (s) => make(parts.env(s))) });
  const stopStallWatch = parts.options.watchStalls ? watchStalls(log, () => actor.getSnapshot().value) : undefined;
  return () => {
    settings.close();
    stopStallWatch?.();
    detachLauncher?.();
    for (const s of SIGNALS) process.off(s, onSignal);
  };
}
