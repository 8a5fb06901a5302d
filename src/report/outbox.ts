import { mkdirSync, readFileSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fsyncDirectory, writeDurably } from '../store/durable.js';
import type { Report } from './report.js';

export const OUTBOX_DIR = 'outbox';
const NAME = /^(\d{12})\.json$/;

/**
 * Reports made and not yet acknowledged, on disk, in the order made: a report is written here
 * (durably) before it is sent, and removed only once the mesh acknowledged it. A crash at any point
 * leaves it to be sent again with the same message id, which the server stores once.
 */
export class Outbox {
  private readonly dir: string;

  constructor(stateDir: string) {
    this.dir = join(stateDir, OUTBOX_DIR);
  }

  add(report: Report): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeDurably(join(this.dir, `${String(report.sequence).padStart(12, '0')}.json`), Buffer.from(JSON.stringify(report)), 0o600);
  }

  /** Report sequences waiting, oldest first. */
  pending(): number[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    return names.flatMap((n) => {
      const m = NAME.exec(n);
      return m ? [Number(m[1])] : [];
    }).sort((a, b) => a - b);
  }

  read(sequence: number): Buffer {
    return readFileSync(join(this.dir, `${String(sequence).padStart(12, '0')}.json`));
  }

  /** Acknowledged: gone from the outbox. */
  remove(sequence: number): void {
    try {
      unlinkSync(join(this.dir, `${String(sequence).padStart(12, '0')}.json`));
      fsyncDirectory(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}
