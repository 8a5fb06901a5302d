import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Readable, pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { Admission, type ManifestEntry } from './admit.js';
import type { ArchiveLimits } from '../../core/config/archive-limits.js';
import { ArchiveRefused, cut, SHOWN_CHARACTERS } from './refusal.js';

export type { ManifestEntry } from './admit.js';

/** Where verified archive bytes are: in memory (an inline source) or in a file of the state directory. */
export type ArchiveBytes = { kind: 'bytes'; bytes: Buffer } | { kind: 'file'; path: string };

export interface Manifest {
  /** Parents before what they hold; directories the archive only implies are listed (0755). */
  entries: ManifestEntry[];
  /** The sum of the files' sizes. */
  bytes: number;
}

/** Called for each file with its whole content, in the archive's order; awaited before the next is read. */
export type OnFile = (entry: ManifestEntry, content: Buffer) => Promise<void> | void;

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
  // pipeline hands back its last stream, the gunzip: the tar reader reads it, and an error of either stream ends it.
  return pipeline(input, createGunzip(), () => {});
}

/** node-tar's own words for a corrupt archive, cut like any value an archive controls. */
const corrupt = (err: Error) =>
  new ArchiveRefused('corrupt', `the archive is truncated or corrupt: ${cut(err.message)}${err.message.length > SHOWN_CHARACTERS ? ` (${err.message.length} characters)` : ''}`);

/**
 * One read of an archive: node-tar's parser in strict mode, each entry admitted (admit.ts) or the
 * whole archive refused; each file's content hashed, and handed to onFile once read whole.
 */
class ArchiveReading {
  readonly admission: Admission;
  failure: Error | undefined;
  private readonly complete: Array<{ entry: ManifestEntry; content: Buffer }> = [];
  readonly parser = new Parser({ strict: true });

  constructor(limits: ArchiveLimits, private readonly onFile: OnFile | undefined) {
    this.admission = new Admission(limits);
    this.parser.on('error', (err: Error) => this.fail(corrupt(err)));
    this.parser.on('entry', (e: ReadEntry) => this.entry(e));
  }

  fail(err: Error): void {
    this.failure ??= err;
  }

  private entry(e: ReadEntry): void {
    let entry: ManifestEntry | undefined;
    try {
      entry = this.failure ? undefined : this.admission.admit(e);
    } catch (err) {
      this.fail(err as Error);
    }
    if (entry === undefined) return void e.resume();
    const file = entry;
    const hash = createHash('sha256');
    const chunks: Buffer[] = [];
    e.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      if (this.onFile) chunks.push(chunk);
    });
    e.on('end', () => {
      file.sha256 = hash.digest('hex');
      if (this.onFile) this.complete.push({ entry: file, content: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) });
    });
  }

  /** Hands the files read whole so far to onFile, one at a time. */
  async drain(): Promise<void> {
    while (this.complete.length > 0 && !this.failure) {
      const { entry, content } = this.complete.shift()!;
      await this.onFile!(entry, content);
    }
  }

  /** A stream that inflates past what its headers declared is a bomb, refused before it is filled. */
  bounded(streamed: number): void {
    const { declared, count } = this.admission;
    if (!this.failure && streamed > declared + ENTRY_OVERHEAD * (count + 1) + STREAM_SLACK) {
      this.fail(new ArchiveRefused('too-large', `the archive inflates to more than its ${count} entries declare (${streamed} bytes read); refused as a bomb`));
    }
  }

  async end(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.parser.once('end', resolve);
      this.parser.once('error', () => resolve());
      this.parser.end();
    });
    await this.drain();
  }
}

/**
 * Reads a tar or tar.gz with node-tar in strict mode and admits each entry, or refuses the whole
 * archive (what is refused: admit.ts; a symbolic link is refused unless it stays inside the target,
 * links.ts); a header's size is refused before its content is inflated, and the inflated stream is
 * bounded by what its headers declared; a truncated or corrupt archive is refused. Without onFile it
 * writes nothing and only hashes; with it each file's content is handed over once read whole.
 */
export async function readArchive(bytes: ArchiveBytes, limits: ArchiveLimits, onFile?: OnFile): Promise<Manifest> {
  const reading = new ArchiveReading(limits, onFile);
  const stream = await tarStream(bytes);
  let streamed = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      streamed += chunk.length;
      reading.parser.write(chunk);
      reading.bounded(streamed);
      if (reading.failure) break;
      await reading.drain();
    }
  } catch (err) {
    reading.fail(corrupt(err as Error));
  } finally {
    if (reading.failure) stream.destroy();
  }
  if (!reading.failure) await reading.end();
  if (!reading.failure) {
    try {
      reading.admission.finish();
    } catch (err) {
      reading.fail(err as Error);
    }
  }
  if (reading.failure) throw reading.failure;
  return { entries: reading.admission.entries, bytes: reading.admission.declared };
}
