import { openStore, stateDirFault } from '../../engine/apply/open-store.js';
import type { HostEnv } from '../../engine/apply/apply.js';
import { onDemandArchiveObjects, type ArchiveLink, type ArchiveObjectsProvider } from '../../kinds/archive/objects.js';
import { linkAuthOf } from '../../core/config/link-auth.js';
import { hostInboxPrefix } from '../../link/wire.js';
import { loadConfig, type HostConfig } from '../../core/config/config.js';
import { acquireLock } from '../../core/store/store-lock.js';
import { ensureStateDir, type Store } from '../../core/store/store.js';
import type { Logger } from '../../core/system/log.js';
import { faultOf } from '../../core/system/errors.js';
import { hostEnvironment, serviceManagerOnce, type HostDeps } from './host-environment.js';
import { KeptDeclaration } from './kept-declaration.js';
import { KEPT_DECLARATION, KEPT_REVISION, type HostPaths } from './host-paths.js';

/** The files beside the store that only the lock's holder writes: a crash's temporaries of them are removed as the store opens. */
export const LOCK_HOLDERS_FILES = [KEPT_DECLARATION, KEPT_REVISION];

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
  open: () => Promise<Store> = () => openStore(stateDir, log, LOCK_HOLDERS_FILES),
): Promise<T> {
  const release = await takeLock(stateDir, log, lock);
  try {
    return await fn(await open());
  } finally {
    release();
  }
}

/** The store's lock taken (the state directory made first); the function returned lets go of it. */
export async function takeLock(stateDir: string, log: Logger, lock: { command: string; timeoutMs: number }): Promise<() => void> {
  // The lock lives in the state directory: a machine never enrolled has none yet (a daemon given a bundle).
  let held: Awaited<ReturnType<typeof acquireLock>>;
  try {
    ensureStateDir(stateDir);
    held = await acquireLock(stateDir, lock);
  } catch (err) {
    throw stateDirFault(stateDir, err) ?? err;
  }
  return () => releaseLock(held, stateDir, log);
}

/**
 * A lock that could not be removed (the disk failed under its unlink) ends nothing: what fn did is done
 * and said. The file left names this process, which the next taker finds ended and takes over.
 */
function releaseLock(held: { release(): void }, stateDir: string, log: Logger): void {
  try {
    held.release();
  } catch (err) {
    log.warn({ stateDir, code: faultOf(err)?.code }, `the lock in ${stateDir} could not be removed (${faultOf(err)?.code ?? (err as Error).message}); the next run takes it over once this process has ended`);
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
