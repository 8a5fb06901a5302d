import { randomBytes } from 'node:crypto';
import { closeSync, constants, fsyncSync, linkSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { newNkeySeed, nkeySeed } from '../../core/declaration/nkey.js';
import { fsyncDirectory } from '../../core/system/durable.js';
import { refused } from '../../core/system/errors.js';

/** The host's own key pair's seed (SN…), under the state directory, mode 0600: it signs every report. */
export const HOST_KEY_FILE = 'node.nk';

export interface HostKey {
  seed: string;
  publicKey: string;
  /** Whether this call made the key (or wrote the one the bundle carried). */
  made: boolean;
}

/**
 * The host's key: the one kept, or a new one made now (or the bundle's, when it carries one). Never
 * replaced: a key the mesh enrolled stays the host's for good, so a kept key that differs from the
 * bundle's is refused, named, and nothing is written.
 */
export function ensureHostKey(stateDir: string, carried?: string): HostKey {
  const path = join(stateDir, HOST_KEY_FILE);
  const kept = readHostKey(stateDir);
  if (kept) {
    if (carried !== undefined && carried.trim() !== kept.seed) {
      throw refused(`${path} holds another key (${kept.publicKey}) than the bundle carries; a host's key is never replaced: remove it by hand to enrol this machine anew`);
    }
    return { ...kept, made: false };
  }
  const seed = carried?.trim() ?? newNkeySeed('node');
  const pair = nkeySeed(seed, 'node');
  if (typeof pair === 'string') throw refused(`the host key the bundle carries is ${pair}`);
  if (!writeKeyOnce(stateDir, path, seed)) return ensureHostKey(stateDir, carried);
  return { seed, publicKey: pair.publicKey, made: true };
}

/**
 * Writes a key file (0600) that never existed, whole: to a temporary file, then linked to its name, so a
 * crash leaves no key or the whole key, and link() never replaces one: two commands racing never both
 * write. False when one is there already (the caller reads the winner's).
 */
export function writeKeyOnce(stateDir: string, path: string, seed: string): boolean {
  const temporary = `${path}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
  const fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, `${seed}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temporary, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkSync(temporary);
  }
  fsyncDirectory(stateDir);
  return true;
}

/** The kept key, or undefined when there is none; a file that is not a node seed is refused, named. */
export function readHostKey(stateDir: string): { seed: string; publicKey: string } | undefined {
  const path = join(stateDir, HOST_KEY_FILE);
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw refused(`${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const pair = nkeySeed(text, 'node');
  if (typeof pair === 'string') throw refused(`${path} is ${pair}`);
  return { seed: text, publicKey: pair.publicKey };
}
