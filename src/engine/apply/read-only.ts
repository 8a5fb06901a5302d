import { access, constants } from 'node:fs/promises';
import type { Refusal } from './gate.js';

/**
 * A root or state directory on a read-only file system (mounted so, or remounted so by the kernel after
 * an I/O error): the apply is refused before anything is touched, naming which and why, instead of
 * failing at its first write. `access(W_OK)` answers EROFS for a read-only mount, even to root.
 */
export async function readOnlyRefusal(places: Array<{ what: string; path: string }>): Promise<Refusal | undefined> {
  const found: string[] = [];
  for (const { what, path } of places) {
    const code = await access(path, constants.W_OK).then(() => undefined, (err: NodeJS.ErrnoException) => err.code);
    if (code === 'EROFS') found.push(`${what} ${path} is on a read-only file system (EROFS)`);
  }
  if (found.length === 0) return undefined;
  return { kind: 'unappliable', reason: `${found.join('; ')}; nothing was touched`, details: ['remount it read-write (mount -o remount,rw), then apply again'] };
}
