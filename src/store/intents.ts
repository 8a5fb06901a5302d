import { closeSync, fdatasync, ftruncateSync, fdatasyncSync, openSync, readFileSync, write, constants } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fsyncDirectory } from './durable.js';

const writeAsync = promisify(write);
const fdatasyncAsync = promisify(fdatasync);

export const INTENTS_FILE = 'intents';

/**
 * What an apply is about to make on the machine, written durably before it is made: one JSON line
 * per batch of writes. The store's next save (which records what was made) empties it; a journal
 * found non-empty at the next start names everything a crash may have left, to be finished or undone
 * under the lock. What a line holds is the writer's business (resources/write-batch.ts); here it is
 * only kept, in order.
 */
export class IntentJournal {
  /** This process appended since the journal was last emptied. */
  private written = false;

  constructor(private readonly stateDir: string) {}

  private get file(): string {
    return join(this.stateDir, INTENTS_FILE);
  }

  /** The intents left by a run that did not save after them, oldest first; a torn last line is dropped. */
  pending(): unknown[] {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const intents: unknown[] = [];
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      try {
        intents.push(JSON.parse(line));
      } catch {
        // Cut by the crash before its fdatasync returned: nothing of its batch was made.
      }
    }
    return intents;
  }

  /** This process wrote intents that no save has settled yet. */
  get unsettled(): boolean {
    return this.written;
  }

  /** Appends one intent and waits until it is on the disk. */
  async append(intent: unknown): Promise<void> {
    let fd: number;
    try {
      fd = openSync(this.file, constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      fd = openSync(this.file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      // The journal's own name must survive a crash as well as its lines.
      fsyncDirectory(this.stateDir);
    }
    try {
      const bytes = Buffer.from(`${JSON.stringify(intent)}\n`);
      let done = 0;
      while (done < bytes.length) done += (await writeAsync(fd, bytes, done, bytes.length - done)).bytesWritten;
      await fdatasyncAsync(fd);
      this.written = true;
    } finally {
      closeSync(fd);
    }
  }

  /** Everything named is recorded or undone: the journal is emptied, durably (a stale intent could undo what a later save recorded and then let go). */
  clear(found: boolean): void {
    if (!this.written && !found) return;
    let fd: number;
    try {
      fd = openSync(this.file, constants.O_WRONLY | constants.O_NOFOLLOW);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    try {
      ftruncateSync(fd, 0);
      fdatasyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.written = false;
  }
}
