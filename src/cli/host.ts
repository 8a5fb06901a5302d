import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig, type HostConfig } from '../config/config.js';
import { hostInboxPrefix } from '../link/wire.js';
import { acquireLock, type HeldLock } from '../store/lock.js';
import { ensureStateDir, type Store } from '../store/store.js';
import { openStore } from '../apply/open.js';
import { Outbox } from '../report/outbox.js';
import { HANDLERS } from '../apply/handlers.js';
import type { ManagerChoice } from '../services/choose.js';
import { systemAccounts } from '../resources/accounts.js';
import type { HostEnv } from '../apply/apply.js';
import { onDemandArchiveObjects, type ArchiveLink, type ArchiveObjectsProvider } from '../archive/objects.js';
import { linkAuthOf } from '../link/connect.js';
import { firewallEnv } from '../firewall/env.js';
import { DEFAULT_CONFIG, DEFAULT_STATE_DIR, stringFlag, type CommandContext } from './context.js';

export const KEPT_DECLARATION = 'declared.json';
/** Which value of the node's key the kept declaration was: `{revision, digest}`, so that a restart reading it again is not a new delivery. */
export const KEPT_REVISION = 'declared.revision';

export interface HostPaths {
  stateDir: string;
  configPath: string;
  root: string;
}

export function hostPaths(ctx: CommandContext): HostPaths {
  return {
    stateDir: resolve(stringFlag(ctx.flags, 'state-dir') ?? DEFAULT_STATE_DIR),
    configPath: resolve(stringFlag(ctx.flags, 'config') ?? DEFAULT_CONFIG),
    root: resolve(stringFlag(ctx.flags, 'root') ?? '/'),
  };
}

export interface OpenHost {
  paths: HostPaths;
  config: HostConfig;
  store: Store;
  env: HostEnv;
  hasKeptDeclaration: boolean;
  /** The link an archive of this command is fetched over (genesis points it at the bundle's). */
  archiveLink?: ArchiveLink;
  /** The archive store over archiveLink, connected on first need; env.archiveObjects is it when there are servers. */
  archiveStore?: ArchiveObjectsProvider;
}

/**
 * Takes the lock, opens the store (cleaning leftovers under the lock) and runs a command against it;
 * the lock is released however the command ends.
 */
export async function withHost<T>(ctx: CommandContext, command: string, run: (host: OpenHost) => Promise<T>): Promise<T> {
  const paths = hostPaths(ctx);
  const { config } = loadConfig(paths.configPath);
  ensureStateDir(paths.stateDir);
  const lock: HeldLock = await acquireLock(paths.stateDir, { command: `mesh-host ${command}`, timeoutMs: config.lockTimeoutMs });
  const archiveLink: ArchiveLink = { settings: { servers: config.servers, ...linkAuthOf(config), inboxPrefix: hostInboxPrefix(config.node) } };
  const archives = onDemandArchiveObjects(archiveLink, ctx.log);
  try {
    const store = openStore(paths.stateDir, ctx.log);
    let choice: Promise<ManagerChoice> | undefined;
    const env: HostEnv = {
      node: config.node,
      root: paths.root,
      stateDir: paths.stateDir,
      store,
      log: ctx.log,
      clock: ctx.clock,
      accounts: systemAccounts(),
      handlers: HANDLERS,
      // Asked for only when services are declared or recorded: the managers and their probes load then.
      serviceManager: () => (choice ??= import('../services/choose.js').then(({ chooseServiceManager }) => chooseServiceManager(ctx.runner, config.serviceManager))),
      verifyPauseMs: config.verifyPauseMs,
      outbox: new Outbox(paths.stateDir, config.outbox),
      ...(config.servers.length > 0 ? { archiveObjects: archives.provider } : {}),
      ...(config.archiveLimits ? { archiveLimits: config.archiveLimits } : {}),
      firewall: firewallEnv(ctx.runner, { root: paths.root, meshPrefix: config.meshTablePrefix }),
    };
    return await run({ paths, config, store, env, hasKeptDeclaration: existsSync(join(paths.stateDir, KEPT_DECLARATION)), archiveLink, archiveStore: archives.provider });
  } finally {
    await archives.close();
    lock.release();
  }
}
