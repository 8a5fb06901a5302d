import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from '../system/log.js';
import { loadConfig, type HostConfig } from './config.js';
import { linkAuthOf } from './link-auth.js';

/** The settings whose change moves the host to another bus. */
export function linkSettingsOf(config: HostConfig): string {
  return JSON.stringify([config.servers, linkAuthOf(config)]);
}

export interface LinkSettingsWatch {
  /** What the host now runs with (after a start or a move re-read the file). */
  settle(config: HostConfig): void;
  close(): void;
}

/**
 * Watches the configuration for an edit of the link settings. It watches the folder, not the file:
 * genesis and most editors replace the file by a rename, after which a watch on the old inode hears
 * nothing more. Events are gathered for a moment, because an in-place write is heard half-written;
 * a file that does not parse then is said and left until the next event, never taken as settings.
 */
export function watchLinkSettings(path: string, config: HostConfig, log: Logger, onChange: (next: HostConfig) => void, settleMs = 150): LinkSettingsWatch {
  let current = linkSettingsOf(config);
  let timer: NodeJS.Timeout | undefined;
  const look = () => {
    timer = undefined;
    let next: HostConfig;
    try {
      next = loadConfig(path).config;
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'the configuration was edited but cannot be read; the link settings in use are kept');
      return;
    }
    const settings = linkSettingsOf(next);
    if (settings === current) return;
    current = settings;
    onChange(next);
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(path), (_event, name) => {
      if (name !== null && name !== basename(path)) return;
      clearTimeout(timer);
      timer = setTimeout(look, settleMs);
    });
    watcher.on('error', (err) => log.warn({ err: err.message }, 'the configuration folder can no longer be watched; SIGHUP still moves the host'));
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'the configuration folder cannot be watched; SIGHUP still moves the host');
  }
  return {
    settle: (next) => {
      current = linkSettingsOf(next);
    },
    close: () => {
      clearTimeout(timer);
      watcher?.close();
    },
  };
}
