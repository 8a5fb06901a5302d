import type { Resource } from '../declaration/schema.js';
import type { ServiceManager } from '../services/manager.js';
import type { ResourceRecord } from '../store/state.js';
import type { Logger } from '../system/log.js';
import type { Finding, Watcher } from './finding.js';
import { watchFootprint, type Owned } from './footprint.js';
import { unitProbe } from './probes.js';
import { watchUnits, type UnitLook } from './units.js';
import { watchContainers, type ContainerEvents } from './containers.js';

export interface HostWatchInput {
  /**
   * The resources of the declaration last applied: the services the mesh asked to run. Asked for
   * apart from the footprint (reading it checks a signature, which takes a while), so that the
   * footprint's first look is taken at once, before anyone could have changed what the apply left.
   */
  declared: () => Promise<readonly Resource[]>;
  /** What the apply that just ended last saw of its units: the unit watcher's first look is compared with it. */
  unitsLeft?: ReadonlyMap<string, UnitLook>;
  /** The footprint: what the host owns on the machine. */
  records: Readonly<Record<string, ResourceRecord>>;
  /** Where the declared paths are (`--root`). */
  root: string;
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
  /** The footprint's first look waits this long (see FootprintWatchOptions). */
  firstLookAfterMs?: number;
}

/** The units the mesh asked to run. */
export const unitsToWatch = (declared: readonly Resource[]): string[] => declared.flatMap((r) => (r.type === 'service' && r.state === 'running' ? [r.unit] : []));

/** The files and directories the host owns. */
export function ownedPaths(records: Readonly<Record<string, ResourceRecord>>): Owned[] {
  const owned: Owned[] = [];
  for (const id in records) {
    const r = records[id]!;
    if (r.type === 'file' || r.type === 'directory') owned.push({ target: r.target, type: r.type });
  }
  return owned;
}

export interface HostWatcher extends Watcher {
  /** Settles once the footprint's first look is taken (at once when the host owns no path). */
  readonly looked: Promise<void>;
}

/** Both watchers of a host between two applies, closed together when the next apply starts. */
export function watchHost(input: HostWatchInput): HostWatcher {
  const owned = ownedPaths(input.records);
  const watchers: Watcher[] = [];
  let closed = false;
  const footprint = owned.length > 0 ? watchFootprint({ owned, root: input.root, onFound: input.onFound, log: input.log, ...(input.firstLookAfterMs ? { firstLookAfterMs: input.firstLookAfterMs } : {}) }) : undefined;
  if (footprint) watchers.push(footprint);
  if (input.containerEvents && input.node !== undefined && Object.values(input.records).some((r) => r.type === 'container')) {
    watchers.push(watchContainers({ events: input.containerEvents, label: `mesh-host.node=${input.node}`, onFound: input.onFound, log: input.log }));
  }
  const serviceManager = input.serviceManager;
  if (serviceManager) {
    const watched = async () => {
      const units = unitsToWatch(await input.declared());
      return { units, manager: units.length > 0 && !closed ? await serviceManager() : undefined };
    };
    watched().then(
      ({ units, manager }) => {
        if (closed || !manager) return;
        watchers.push(watchUnits({ units, probe: unitProbe(manager, input.managerRoot ?? '/'), ...(input.unitsLeft ? { left: input.unitsLeft } : {}), onFound: input.onFound, onWatching: () => input.onUnitsWatched?.(units), log: input.log, ...(input.unitIntervalMs ? { intervalMs: input.unitIntervalMs } : {}) }));
      },
      (err: Error) => input.log.warn({ err: err.message }, 'watch: no service manager to watch the units with'),
    );
  }
  return {
    looked: footprint?.looked ?? Promise.resolve(),
    close() {
      closed = true;
      for (const w of watchers) w.close();
    },
  };
}
