import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A small file system of its own (tmpfs with `size=` and `nr_inodes=`), mounted at `dir`: a disk that
 * fills up for real, whose room a test takes away and gives back with a filler file.
 */
export class SmallDisk {
  private constructor(readonly dir: string) {}

  static mount(dir: string, sizeKiB: number, inodes = 200): SmallDisk {
    mkdirSync(dir, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKiB}k,nr_inodes=${inodes},mode=0755`, 'tmpfs', dir]);
    return new SmallDisk(dir);
  }

  /** Bytes a new write may still take. */
  free(): number {
    const s = statfsSync(this.dir);
    return s.bavail * s.bsize;
  }

  /** Fills the disk until `leave` bytes are free (rounded down to its blocks): one filler file, grown. */
  leave(leave: number): void {
    const chunk = Buffer.alloc(4096, 0x2e);
    const fd = openSync(join(this.dir, '.filler'), 'a');
    try {
      while (this.free() > leave) writeSync(fd, chunk, 0, Math.min(chunk.length, this.free() - leave));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
    } finally {
      closeSync(fd);
    }
  }

  /** The room given back: the filler removed. */
  release(): void {
    rmSync(join(this.dir, '.filler'), { force: true });
  }

  unmount(): void {
    execFileSync('umount', ['-l', this.dir]);
  }
}

/** Every regular file under dir (the filler aside), by path relative to it, with its content. */
export function filesUnder(dir: string, rel = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(join(dir, rel))) {
    const path = rel ? `${rel}/${name}` : name;
    if (path === '.filler') continue;
    const st = statSync(join(dir, path));
    if (st.isDirectory()) Object.assign(out, filesUnder(dir, path));
    else out[path] = readFileSync(join(dir, path), 'utf8');
  }
  return out;
}
