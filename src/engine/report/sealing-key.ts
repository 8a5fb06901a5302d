import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { curvePublicKey, newCurveSeed, sealingOf, type Sealing } from '../../core/declaration/sealed.js';
import { refused } from '../../core/system/errors.js';
import { writeKeyOnce } from './host-key.js';

/** The host's curve key's seed (SX…), under the state directory, mode 0600: it opens what the mesh seals to this host. */
export const SEALING_KEY_FILE = 'seal.xk';

export interface SealingKey {
  seed: string;
  publicKey: string;
  /** Whether this call made the key (or wrote the one the bundle carried). */
  made: boolean;
}

/**
 * The host's curve key: the one kept, or one made now (the bundle's, when it carries one). A kept key
 * that differs from the bundle's is refused, named, and nothing is written: values sealed to it would
 * no longer open.
 */
export function ensureSealingKey(stateDir: string, carried?: string): SealingKey {
  const path = join(stateDir, SEALING_KEY_FILE);
  const kept = readSealingKey(stateDir);
  if (kept) {
    if (carried !== undefined && carried.trim() !== kept.seed) throw refused(`${path} holds another curve key (${kept.publicKey}) than the bundle carries; remove it by hand to enrol this machine anew`);
    return { ...kept, made: false };
  }
  const seed = carried?.trim() ?? newCurveSeed();
  const publicKey = curvePublicKey(seed);
  if (publicKey === undefined) throw refused('the curve key the bundle carries is not a curve seed (SX…)');
  if (!writeKeyOnce(stateDir, path, seed)) return ensureSealingKey(stateDir, carried);
  return { seed, publicKey, made: true };
}

/** The kept curve key, or undefined when there is none; a file that is not a curve seed is refused, named. */
export function readSealingKey(stateDir: string): { seed: string; publicKey: string } | undefined {
  const path = join(stateDir, SEALING_KEY_FILE);
  let seed: string;
  try {
    seed = readFileSync(path, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw refused(`${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const publicKey = curvePublicKey(seed);
  if (publicKey === undefined) throw refused(`${path} is not a curve seed (SX…)`);
  return { seed, publicKey };
}

/**
 * The host's opener, its key read (or made) when a sealed or sensitive value first asks for it: an apply
 * with none reads nothing. A dry run (`make` false) on a host with no key makes none: it opens nothing
 * (a value sealed to any key is sealed for another host) and digests under a key of its own run.
 */
export function lazySealing(stateDir: string, make = true): Sealing {
  let sealing: Sealing | undefined;
  const get = () => (sealing ??= sealingOf((make ? ensureSealingKey(stateDir) : readSealingKey(stateDir))?.seed ?? newCurveSeed()));
  return { publicKey: () => get().publicKey(), open: (value) => get().open(value), digest: (plain) => get().digest(plain) };
}
