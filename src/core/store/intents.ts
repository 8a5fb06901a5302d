import { closeSync, ftruncateSync, fdatasyncSync, openSync, readFileSync, constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncDirectoryAsync } from '../system/durable.js';
import { FaultError, faultOf } from '../system/errors.js';

export const INTENTS_FILE = 'intents';

/**
 * What an apply is about to make on the machine, written durably before it is made: one JSON line
 * per batch of writes. The store's next save (which records what was made) empties it; a journal
 * found non-empty at the next start names everything a crash may have left, to be finished or undone
 * under the lock. What a line holds is the writer's business (engine/converge/write-batch.ts); here it is
 * only kept, in order.
 */
export class IntentJournal {
  /** This process appended since the journal was last emptied. */
  private written = false;
  /**
   * The journal held bytes when it was read: a line torn by a power cut (only part of its write reached
   * the disk) names nothing, but must go before the next line is appended, or it would join that line
   * and hide it.
   */
  private leftover = false;

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
    this.leftover = text.length > 0;
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

  /**
   * Appends one intent and waits until it is on the disk. A failed write names the journal's own path
   * with what the system said: the apply's report says where the disk failed.
   */
  async append(intent: unknown): Promise<void> {
    try {
      await this.appendDurably(intent);
    } catch (err) {
      const fault = faultOf(err);
      throw fault ? new FaultError((err as Error).message, { ...fault, path: this.file }) : err;
    }
  }

  /** Every wait on libuv's threads (it runs during an apply). */
  private async appendDurably(intent: unknown): Promise<void> {
    let handle: FileHandle;
    try {
      handle = await open(this.file, constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      handle = await open(this.file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      // The journal's own name must survive a crash as well as its lines.
      await fsyncDirectoryAsync(this.stateDir).catch(async (err: unknown) => {
        await handle.close();
        throw err;
      });
    }
    try {
      await handle.writeFile(`${JSON.stringify(intent)}\n`);
      await handle.datasync();
      this.written = true;
    } finally {
      await handle.close();
    }
  }

  /** Everything named is recorded or undone: the journal is emptied, durably (a stale intent could undo what a later save recorded and then let go). */
  clear(found: boolean): void {
    if (!this.written && !found && !this.leftover) return;
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
    this.leftover = false;
  }

  /** clear(), with the disk's waits off the event loop: the apply's save. */
  async clearAsync(found: boolean): Promise<void> {
    if (!this.written && !found && !this.leftover) return;
    let handle: FileHandle;
    try {
      handle = await open(this.file, constants.O_WRONLY | constants.O_NOFOLLOW);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    try {
      await handle.truncate(0);
      await handle.datasync();
    } finally {
      await handle.close();
    }
    this.written = false;
    this.leftover = false;
  }
}
