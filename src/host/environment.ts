import type { ArchiveResource, ContainerResource, ServiceResource } from '../declaration/schema.js';
import type { HostEnv } from '../apply/apply.js';
import { DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits } from '../config/archive-limits.js';
import type { ArchiveObjectsProvider } from '../archive/objects.js';
import type { HandlerTable } from '../resources/converge.js';
import { BASE_HANDLERS } from '../resources/handlers.js';
import { lazyHandler, pathShape } from '../resources/types.js';
import { SERVICE_SHAPE, type ServiceRuntime, type UnitsLeft } from '../services/runtime.js';
import { CONTAINER_SHAPE } from '../containers/spec.js';
import { engineOnce } from '../containers/connect.js';
import { withBuildFault } from '../release/fault.js';
import { firewallEnv } from '../firewall/env.js';
import { DEFAULTS, type HostConfig } from '../config/config.js';
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

const noServiceManager = async (): Promise<ManagerChoice> => ({ manager: undefined, reason: 'no service manager is provided' });

/** What the resource kinds need from the host, each given to its own handler. */
export interface HandlerParts {
  /** This host's node id: the containers it makes carry it. */
  node: string;
  stateDir: string;
  clock: Clock;
  /** The service manager, asked for only when an apply has services to converge or remove (default: none). */
  serviceManager?: () => Promise<ManagerChoice>;
  /** The pause between a unit's two looks (default 1.5 s). */
  verifyPauseMs?: number;
  /** Told what each apply with services last saw of its units (the daemon's unit watcher starts from it). */
  unitsLeft?: (left: UnitsLeft) => void;
  /** Bounds of what an archive may unpack to, and of the kept archives (defaults: 1 GiB each). */
  archiveLimits?: Partial<ArchiveLimits>;
  /** The mesh's archive store, asked at each apply; none without a link. */
  archiveObjects?: () => ArchiveObjectsProvider | undefined;
  /** The container engine's socket (default: the first usual one that answers). */
  containerSocket?: string;
}

/**
 * The handler table: every resource kind this host applies, each made by its own factory over what
 * it needs. A new kind is one line here. The services' code (and XState with it) and the archives'
 * (node-tar) load only when an apply has resources of theirs.
 */
export function hostHandlers(parts: HandlerParts): HandlerTable {
  const services: ServiceRuntime = { manager: parts.serviceManager ?? noServiceManager, clock: parts.clock, pauseMs: parts.verifyPauseMs ?? DEFAULTS.verifyPauseMs, ...(parts.unitsLeft ? { onLeft: parts.unitsLeft } : {}) };
  const archives = { stateDir: parts.stateDir, limits: { ...DEFAULT_ARCHIVE_LIMITS, ...parts.archiveLimits }, objects: parts.archiveObjects ?? (() => undefined), clock: parts.clock };
  return withBuildFault({
    ...BASE_HANDLERS,
    service: lazyHandler<ServiceResource>(SERVICE_SHAPE, () => import('../resources/service.js').then((m) => m.serviceHandler(services))),
    archive: lazyHandler<ArchiveResource>(pathShape(), () => import('../resources/archive.js').then((m) => m.archiveHandler(archives))),
    container: lazyHandler<ContainerResource>(CONTAINER_SHAPE, () =>
      import('../containers/handler.js').then((m) =>
        m.containerHandler({ node: parts.node, stateDir: parts.stateDir, engine: engineOnce(parts.containerSocket), clock: parts.clock, pauseMs: services.pauseMs, archiveLimits: archives.limits, objects: archives.objects }),
      ),
    ),
  });
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
    }),
    serviceManager: input.serviceManager,
    outbox: input.outbox ?? new Outbox(paths.stateDir, config.outbox),
    ...(input.facts ? { facts: input.facts } : {}),
    firewall: firewallEnv(deps.runner, { root: paths.root, meshPrefix: config.meshTablePrefix }),
  };
}
