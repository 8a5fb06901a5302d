import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Readable, pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import type { ArchiveLimits } from '../config/archive-limits.js';
import { entryName, parentOf } from './local-path.js';
import { ArchiveRefused } from './refusal.js';

/** Where verified archive bytes are: in memory (an inline source) or in a file of the state directory. */
export type ArchiveBytes = { kind: 'bytes'; bytes: Buffer } | { kind: 'file'; path: string };

/** One entry as it will stand under the target: a regular file or a directory, mode masked to 0777. */
export interface ManifestEntry {
  /** Relative to the target, normal ('bin/nats'). */
  name: string;
  type: 'file' | 'dir';
  mode: number;
  size: number;
  /** sha256 (hex) of a file's content. */
  sha256?: string;
}

export interface Manifest {
  /** Parents before what they hold; directories the archive only implies are listed (0755). */
  entries: ManifestEntry[];
  /** The sum of the files' sizes. */
  bytes: number;
}

/** Called for each file with its whole content, in the archive's order; awaited before the next is read. */
export type OnFile = (entry: ManifestEntry, content: Buffer) => Promise<void> | void;

const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);
const LINK_TYPES = new Set(['Link', 'SymbolicLink']);
/** Headers and padding an entry may cost beyond its content, and slack for the chunk being parsed. */
const ENTRY_OVERHEAD = 4096;
const STREAM_SLACK = 4 * 1024 * 1024;

async function isGzip(bytes: ArchiveBytes): Promise<boolean> {
  let head: Buffer;
  if (bytes.kind === 'bytes') head = bytes.bytes.subarray(0, 2);
  else {
    const handle = await open(bytes.path, 'r');
    try {
      head = Buffer.alloc(2);
      const { bytesRead } = await handle.read(head, 0, 2, 0);
      head = head.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  }
  return head.length === 2 && head[0] === 0x1f && head[1] === 0x8b;
}

/** The archive as tar bytes: gunzipped here, so that what a gzip stream inflates to is counted. */
async function tarStream(bytes: ArchiveBytes): Promise<Readable> {
  const input = bytes.kind === 'bytes' ? Readable.from([bytes.bytes]) : createReadStream(bytes.path, { highWaterMark: 256 * 1024 });
  if (!(await isGzip(bytes))) return input;
  return pipeline(input, createGunzip(), () => {}) as unknown as Readable;
}

/**
 * Reads a tar or tar.gz with node-tar in strict mode and admits each entry, or refuses the whole
 * archive: a symbolic or hard link, a device or fifo, set-uid/set-gid/sticky bits, a name that is
 * not local, the same name twice, a file where a directory is needed, more than the limits allow (a
 * header's size is refused before its content is inflated, and the inflated stream is bounded by
 * what its headers declared), a truncated or corrupt archive. Without onFile it writes nothing and
 * only hashes; with it each file's content is handed over once read whole. Owners in the archive
 * are never read.
 */
export async function readArchive(bytes: ArchiveBytes, limits: ArchiveLimits, onFile?: OnFile): Promise<Manifest> {
  const entries: ManifestEntry[] = [];
  const byName = new Map<string, ManifestEntry>();
  /** Names the archive lists itself (not only implies). */
  const explicit = new Set<string>();
  const complete: Array<{ entry: ManifestEntry; content: Buffer }> = [];
  let declared = 0;
  let count = 0;
  let failure: Error | undefined;
  const fail = (err: Error) => (failure ??= err);

  /** Directories an entry's name implies, listed before it (0755) unless the archive lists them. */
  const ensureParents = (name: string) => {
    const parent = parentOf(name);
    if (parent === '') return;
    const known = byName.get(parent);
    if (known?.type === 'file') throw new ArchiveRefused('duplicate-entry', `'${name}' lies under '${parent}', which the archive holds as a file`, name);
    if (known) return;
    ensureParents(parent);
    const dir: ManifestEntry = { name: parent, type: 'dir', mode: 0o755, size: 0 };
    byName.set(parent, dir);
    entries.push(dir);
  };

  const admit = (e: ReadEntry): ManifestEntry | undefined => {
    const raw = e.path;
    if (LINK_TYPES.has(e.type)) {
      throw new ArchiveRefused('link-entry', `entry '${raw}' is a ${e.type === 'Link' ? 'hard' : 'symbolic'} link (to '${e.linkpath ?? '?'}'); links are never unpacked`, raw);
    }
    const isFile = FILE_TYPES.has(e.type);
    if (!isFile && e.type !== 'Directory') throw new ArchiveRefused('special-entry', `entry '${raw}' is a ${e.type}; only files and directories are unpacked`, raw);
    const named = entryName(raw);
    if ('problem' in named) throw new ArchiveRefused('not-local', `entry '${raw}' is not a local path (${named.problem})`, raw);
    const mode = e.mode ?? (isFile ? 0o644 : 0o755);
    if ((mode & 0o7000) !== 0) {
      throw new ArchiveRefused('special-bits', `entry '${raw}' carries ${[mode & 0o4000 ? 'set-uid' : '', mode & 0o2000 ? 'set-gid' : '', mode & 0o1000 ? 'sticky' : ''].filter(Boolean).join(', ')} bits (mode ${(mode & 0o7777).toString(8).padStart(4, '0')})`, raw);
    }
    if (named.name === '') {
      if (isFile) throw new ArchiveRefused('not-local', `entry '${raw}' names the target itself as a file`, raw);
      return undefined; // './': the target, which the resource (not the archive) describes
    }
    if (++count > limits.maxEntries) throw new ArchiveRefused('too-large', `the archive holds more than ${limits.maxEntries} entries (the limit)`, raw);
    const size = isFile ? e.size ?? 0 : 0;
    declared += size;
    if (declared > limits.maxBytes) throw new ArchiveRefused('too-large', `the archive unpacks to more than ${limits.maxBytes} bytes (the limit), at entry '${raw}'`, raw);
    if (explicit.has(named.name)) throw new ArchiveRefused('duplicate-entry', `entry '${raw}' names '${named.name}' a second time`, raw);
    explicit.add(named.name);
    const implied = byName.get(named.name);
    if (implied && isFile) throw new ArchiveRefused('duplicate-entry', `entry '${raw}' is a file, but entries before it lie under '${named.name}'`, raw);
    ensureParents(named.name);
    if (implied) {
      // A directory the archive implied so far, listed now with its own mode.
      implied.mode = mode & 0o777;
      return undefined;
    }
    const entry: ManifestEntry = { name: named.name, type: isFile ? 'file' : 'dir', mode: mode & 0o777, size };
    byName.set(named.name, entry);
    entries.push(entry);
    return entry;
  };

  const parser = new Parser({ strict: true });
  parser.on('error', (err: Error) => fail(new ArchiveRefused('corrupt', `the archive is truncated or corrupt: ${err.message}`)));
  parser.on('entry', (e: ReadEntry) => {
    let entry: ManifestEntry | undefined;
    try {
      entry = failure ? undefined : admit(e);
    } catch (err) {
      fail(err as Error);
    }
    if (entry?.type !== 'file') return void e.resume();
    const hash = createHash('sha256');
    const chunks: Buffer[] = [];
    e.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      if (onFile) chunks.push(chunk);
    });
    e.on('end', () => {
      entry.sha256 = hash.digest('hex');
      if (onFile) complete.push({ entry, content: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) });
    });
  });

  const drain = async () => {
    while (complete.length > 0 && !failure) {
      const { entry, content } = complete.shift()!;
      await onFile!(entry, content);
    }
  };

  const stream = await tarStream(bytes);
  let streamed = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      streamed += chunk.length;
      parser.write(chunk);
      if (!failure && streamed > declared + ENTRY_OVERHEAD * (count + 1) + STREAM_SLACK) {
        fail(new ArchiveRefused('too-large', `the archive inflates to more than its ${count} entries declare (${streamed} bytes read); refused as a bomb`));
      }
      if (failure) break;
      await drain();
    }
  } catch (err) {
    fail(new ArchiveRefused('corrupt', `the archive is truncated or corrupt: ${(err as Error).message}`));
  } finally {
    if (failure) stream.destroy();
  }
  if (!failure) {
    await new Promise<void>((resolve) => {
      parser.once('end', resolve);
      parser.once('error', () => resolve());
      parser.end();
    });
    await drain();
  }
  if (failure) throw failure;
  return { entries, bytes: declared };
}
