import { readSync } from 'node:fs';

/** Reads up to `size` bytes of an open file from its start; fewer when it is shorter now. */
export function readFully(fd: number, size: number): Buffer {
  const buffer = Buffer.allocUnsafe(size);
  let read = 0;
  while (read < size) {
    const n = readSync(fd, buffer, read, size - read, read);
    if (n === 0) break;
    read += n;
  }
  return read === size ? buffer : buffer.subarray(0, read);
}
