import type { HostEnv } from '../../engine/apply/apply.js';
import type { ArchiveObjectsProvider } from '../../kinds/archive/objects.js';
import type { HandlerTable } from '../../engine/converge/converge.js';
import type { UnitsLeft } from '../../kinds/service/runtime.js';
import { kindHandlers } from '../../kinds/kind-handlers.js';
import type { KindParts } from '../../kinds/kind-parts.js';
import { withBuildFault } from '../release/fault.js';
import { firewallEnv } from '../../machine/filters/env.js';
import type { HostConfig } from '../../core/config/config.js';
import type { Facts } from '../../engine/report/report.js';
import { Outbox } from '../../engine/report/outbox.js';
import { systemAccounts } from '../../engine/converge/unix-accounts.js';
import type { ManagerChoice } from '../../machine/services/choose.js';
import type { Store } from '../../core/store/store.js';
import type { Clock } from '../../core/system/clock.js';
import type { Logger } from '../../core/system/log.js';
import type { CommandRunner } from '../../core/system/runner.js';
import type { HostPaths } from './host-paths.js';

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
  return () => (choice ??= import('../../machine/services/choose.js').then(({ chooseServiceManager }) => chooseServiceManager(runner, config.serviceManager)));
}

/** What the resource kinds need from the host, each given to its own handler. */
export type HandlerParts = KindParts;

/**
 * The handler table: every resource kind this host applies, as the registry of kinds lists them, each
 * made by its own factory over what it needs. The services' code (and XState with it), the archives'
 * (node-tar) and the containers' load only when an apply has resources of theirs.
 */
export function hostHandlers(parts: HandlerParts): HandlerTable {
  return withBuildFault(kindHandlers(parts));
}

export interface HostEnvInput {
  paths: HostPaths;
  config: HostConfig;
  store: Store;
  deps: HostDeps;
  serviceManager: () => Promise<ManagerChoice>;
  outbox?: Outbox;
  facts?: () => Promise<Partial<Facts>>;
  /** The mesh's archive store, asked at each apply; none (or absent) without a link. */
  archiveObjects?: () => ArchiveObjectsProvider | undefined;
  /** Told what each apply with services last saw of its units. */
  unitsLeft?: (left: UnitsLeft) => void;
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
    handlers: hostHandlers({
      node: config.node,
      stateDir: paths.stateDir,
      clock: deps.clock,
      serviceManager: input.serviceManager,
      verifyPauseMs: config.verifyPauseMs,
      ...(config.archiveLimits ? { archiveLimits: config.archiveLimits } : {}),
      ...(input.archiveObjects ? { archiveObjects: input.archiveObjects } : {}),
      ...(input.unitsLeft ? { unitsLeft: input.unitsLeft } : {}),
      ...(config.containerSocket ? { containerSocket: config.containerSocket } : {}),
      runner: deps.runner,
    }),
    serviceManager: input.serviceManager,
    outbox: input.outbox ?? new Outbox(paths.stateDir, config.outbox),
    ...(input.facts ? { facts: input.facts } : {}),
    firewall: firewallEnv(deps.runner, { root: paths.root, meshPrefix: config.meshTablePrefix }),
  };
}
