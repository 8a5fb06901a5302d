import { openStore } from '../apply/open.js';
import type { HostEnv } from '../apply/apply.js';
import { onDemandArchiveObjects, type ArchiveLink, type ArchiveObjectsProvider } from '../archive/objects.js';
import { linkAuthOf } from '../config/link-auth.js';
import { hostInboxPrefix } from '../link/wire.js';
import { loadConfig, type HostConfig } from '../config/config.js';
import { acquireLock } from '../store/lock.js';
import { ensureStateDir, type Store } from '../store/store.js';
import type { Logger } from '../system/log.js';
import { hostEnvironment, serviceManagerOnce, type HostDeps } from './environment.js';
import { KeptDeclaration } from './kept.js';
import type { HostPaths } from './paths.js';

/** A host opened under its lock: what a command acts on. */
export interface OpenHost {
  paths: HostPaths;
  config: HostConfig;
  store: Store;
  env: HostEnv;
  kept: KeptDeclaration;
  /** The link an archive of this command is fetched over (genesis points it at the bundle's). */
  archiveLink: ArchiveLink;
  /** The archive store over archiveLink, connected on first need; the archives' handler uses it while archiveLink names servers. */
  archiveStore: ArchiveObjectsProvider;
}

/**
 * Takes the lock, opens the store (cleaning leftovers and counting the outbox under the lock) and runs
 * fn against it; the lock is released however fn ends. `open` is how the store is had once the lock is
 * held (a daemon may use again the store of its own last run).
 */
export async function withLockedStore<T>(
  stateDir: string,
  log: Logger,
  lock: { command: string; timeoutMs: number },
  fn: (store: Store) => Promise<T>,
  open: () => Promise<Store> = () => openStore(stateDir, log),
): Promise<T> {
  // The lock lives in the state directory: a machine never enrolled has none yet (a daemon given a bundle).
  ensureStateDir(stateDir);
  const held = await acquireLock(stateDir, lock);
  try {
    return await fn(await open());
  } finally {
    held.release();
  }
}

/** A command's host: the configuration read, the state directory made, the store opened under the lock. */
export async function openHost<T>(paths: HostPaths, deps: HostDeps, command: string, run: (host: OpenHost) => Promise<T>, options: { lockTimeoutMs?: number } = {}): Promise<T> {
  const { config } = loadConfig(paths.configPath);
  const archiveLink: ArchiveLink = { settings: { servers: config.servers, ...linkAuthOf(config), inboxPrefix: hostInboxPrefix(config.node) } };
  const archives = onDemandArchiveObjects(archiveLink, deps.log);
  try {
    return await withLockedStore(paths.stateDir, deps.log, { command: `mesh-host ${command}`, timeoutMs: options.lockTimeoutMs ?? config.lockTimeoutMs }, async (store) => {
      const env = hostEnvironment({
        paths,
        config,
        store,
        deps,
        serviceManager: serviceManagerOnce(deps.runner, config),
        // Asked at each apply: genesis points the link at the bundle's servers before it applies.
        archiveObjects: () => (archiveLink.settings.servers.length > 0 ? archives.provider : undefined),
      });
      return run({ paths, config, store, env, kept: new KeptDeclaration(paths.stateDir), archiveLink, archiveStore: archives.provider });
    });
  } finally {
    await archives.close();
  }
}
