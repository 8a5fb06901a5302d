import type { ArchiveLimits } from '../core/config/archive-limits.js';
import type { Clock } from '../core/system/clock.js';
import type { CommandRunner } from '../core/system/runner.js';
import type { ManagerChoice } from '../machine/services/choose.js';
import type { Resource, ResourceType } from '../core/declaration/schema.js';
import type { ResourceHandler } from '../engine/converge/handler-types.js';
import type { ArchiveObjectsProvider } from './archive/objects.js';
import type { UnitsLeft } from './service/runtime.js';
import type { UnitLook } from './service/unit-watch.js';
import type { ContainerEvents } from './container/container-watch.js';
import type { ServiceManager } from '../machine/services/manager.js';
import type { ResourceRecord } from '../core/store/state.js';
import type { Logger } from '../core/system/log.js';
import type { Finding, Watcher } from '../engine/converge/watch-finding.js';

/** What the host offers the kinds, each taking what it needs for its own handler. */
export interface KindParts {
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
  /** Runs the machine's own tools for the kinds that act through them (useradd, groupadd); default: none, and such a kind refuses. */
  runner?: CommandRunner;
}

/** What the host offers a kind's watcher between two applies. */
export interface KindWatchInput {
  /**
   * The resources of the declaration last applied. Asked for apart from the footprint (reading it checks
   * a signature, which takes a while), so that the footprint's first look is taken at once.
   */
  declared: () => Promise<readonly Resource[]>;
  /** The footprint: what the host owns on the machine. */
  records: Readonly<Record<string, ResourceRecord>>;
  /** What the apply that just ended last saw of its units: the unit watcher's first look is compared with it. */
  unitsLeft?: ReadonlyMap<string, UnitLook>;
  /**
   * Where the service manager's own files are seen (its invocation links, OpenRC's pidfiles): the
   * machine's `/`, whatever `--root` says, since services are the machine's and never rooted.
   */
  managerRoot?: string;
  /** Asked for only when a service is to be watched. */
  serviceManager?: () => Promise<ServiceManager | undefined>;
  /** The container engine's events, asked for only when the host made containers (the store records them). */
  containerEvents?: () => Promise<ContainerEvents>;
  /** This host's node id: its containers carry it as a label. */
  node?: string;
  onFound(found: Finding[]): void;
  /** Once the units are watched (their first look taken): what happens to them from then on is heard. */
  onUnitsWatched?(units: readonly string[]): void;
  log: Logger;
  unitIntervalMs?: number;
}

/**
 * How the host watches a kind's resources between applies: through the footprint (the paths it owns,
 * watched by inotify, each as a file or a directory), or by a watcher of the kind's own, started when it
 * has something to watch (undefined when not).
 */
export type KindWatch = { footprint: 'file' | 'directory' } | { own(input: KindWatchInput): Watcher | undefined };

/** A kind's code, as the host reaches it: its handler, made from the parts it needs, and its watcher between applies. */
export interface KindCode<T extends ResourceType> {
  handler(parts: KindParts): ResourceHandler<Extract<Resource, { type: T }>>;
  watch?: KindWatch;
}
