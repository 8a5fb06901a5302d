import type { ArchiveEnv } from '../archive/obtain.js';
import type { ArchiveObjectsProvider } from '../archive/objects.js';
import type { ArchiveLimits } from '../../core/config/archive-limits.js';
import type { Clock } from '../../core/system/clock.js';
import type { ContainerEngine, Listed } from './engine.js';
import type { Watched } from './look.js';
import { LABEL } from './engine-request.js';

/** What the container handler is made with, once per host. */
export interface ContainerEnv {
  node: string;
  stateDir: string;
  /** The engine, connected on first need; throws saying why there is none. */
  engine: () => Promise<ContainerEngine>;
  clock: Clock;
  /** The pause between the two looks (the services' own). */
  pauseMs: number;
  /** Bounds of the archives kept in the state directory (an image archive is fetched there first). */
  archiveLimits: ArchiveLimits;
  /** The mesh's archive store, asked at each apply; none without a link. */
  objects: () => ArchiveObjectsProvider | undefined;
  /**
   * Makes durable what was written to the file system holding this path (the engine's storage), when
   * the path is on this machine: podman syncs none of its own writes, and a power cut in the minute after
   * a container is made can leave its storage unreadable.
   */
  syncFileSystem?: (path: string) => Promise<void>;
}

/** Where an image archive of the mesh is fetched and checked, for one apply. */
export function archivesOf(env: ContainerEnv): ArchiveEnv {
  const objects = env.objects();
  return { stateDir: env.stateDir, limits: env.archiveLimits, clock: env.clock, ...(objects ? { objects } : {}) };
}

/** What one apply's container steps share: the engine, its one listing of the host's containers, the watched. */
export interface ContainerRun {
  engine: ContainerEngine;
  /** The engine's writes so far made durable (nothing without a way to sync): after each change of a replacement. */
  durable(): Promise<void>;
  /** The host's containers by resource id, from one listing by label. */
  owned: Map<string, Listed[]>;
  watched: Watched[];
}

/** One listing, by the node's label, of every container this host made. */
export async function listOwned(engine: ContainerEngine, node: string): Promise<Map<string, Listed[]>> {
  const owned = new Map<string, Listed[]>();
  for (const c of await engine.list([`${LABEL.node}=${node}`])) {
    const id = c.labels[LABEL.resource];
    if (id !== undefined) owned.set(id, [...(owned.get(id) ?? []), c]);
  }
  return owned;
}

/** Running, or about to be (the engine restarting it is not a stop). */
export const isUp = (c: Pick<Listed, 'state'>) => c.state === 'running' || c.state === 'restarting';

/** The run's `durable`: the engine's storage root asked once, then its file system synced at each call. */
export function engineDurable(engine: ContainerEngine, env: Pick<ContainerEnv, 'syncFileSystem'>): () => Promise<void> {
  const sync = env.syncFileSystem;
  if (!sync) return async () => undefined;
  let root: Promise<string | undefined> | undefined;
  return async () => {
    const path = await (root ??= engine.storageRoot());
    if (path !== undefined) await sync(path);
  };
}
