import type { HostEnv } from '../apply/apply.js';
import type { ArchiveObjectsProvider } from '../archive/objects.js';
import { HANDLERS } from '../apply/handlers.js';
import { withBuildFault } from '../release/fault.js';
import { firewallEnv } from '../firewall/env.js';
import type { HostConfig } from '../config/config.js';
import type { Facts } from '../report/report.js';
import { Outbox } from '../report/outbox.js';
import { systemAccounts } from '../resources/accounts.js';
import type { ManagerChoice } from '../services/choose.js';
import type { Store } from '../store/store.js';
import type { Clock } from '../system/clock.js';
import type { Logger } from '../system/log.js';
import type { CommandRunner } from '../system/runner.js';
import type { HostPaths } from './paths.js';

/** What every part of the host is given rather than reaching for: the log, the clock, the command runner. */
export interface HostDeps {
  log: Logger;
  clock: Clock;
  runner: CommandRunner;
}

/**
 * The service manager, chosen once and only when an apply has services to converge or remove: the
 * managers and their probes load then, not at every command's start.
 */
export function serviceManagerOnce(runner: CommandRunner, config: Pick<HostConfig, 'serviceManager'>): () => Promise<ManagerChoice> {
  let choice: Promise<ManagerChoice> | undefined;
  return () => (choice ??= import('../services/choose.js').then(({ chooseServiceManager }) => chooseServiceManager(runner, config.serviceManager)));
}

export interface HostEnvInput {
  paths: HostPaths;
  config: HostConfig;
  store: Store;
  deps: HostDeps;
  serviceManager: () => Promise<ManagerChoice>;
  outbox?: Outbox;
  facts?: () => Promise<Partial<Facts>>;
  /** The mesh's archive store; absent without a link. */
  archiveObjects?: ArchiveObjectsProvider;
}

/** The one way the host's environment for an apply is built, by a command and by the daemon alike. */
export function hostEnvironment(input: HostEnvInput): HostEnv {
  const { paths, config, deps } = input;
  return {
    node: config.node,
    root: paths.root,
    stateDir: paths.stateDir,
    store: input.store,
    log: deps.log,
    clock: deps.clock,
    accounts: systemAccounts(),
    handlers: withBuildFault(HANDLERS),
    serviceManager: input.serviceManager,
    verifyPauseMs: config.verifyPauseMs,
    outbox: input.outbox ?? new Outbox(paths.stateDir, config.outbox),
    ...(input.facts ? { facts: input.facts } : {}),
    ...(input.archiveObjects ? { archiveObjects: input.archiveObjects } : {}),
    ...(config.archiveLimits ? { archiveLimits: config.archiveLimits } : {}),
    firewall: firewallEnv(deps.runner, { root: paths.root, meshPrefix: config.meshTablePrefix }),
  };
}
