import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { ArchiveRefused } from './refusal.js';

export const sha256Hex = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** The sha256 of a file, streamed (an archive may be far larger than memory should hold). */
export async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The refusal of bytes that are not the declared archive, naming both digests. */
export function digestMismatch(what: string, declared: string, actual: string): ArchiveRefused {
  return new ArchiveRefused('digest-mismatch', `${what} has sha256 ${actual}, but the declaration says ${declared}; refused before a single entry was read`);
}
