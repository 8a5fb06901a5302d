import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { snapshot } from './snapshot.js';

/** A fingerprint of everything under a folder: type, mode, owner, content or link target of each entry (a file's inode too). */
export function hashTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [path, e] of snapshot({ t: dir })) {
    const rel = path.slice('t:/'.length) || '.';
    const meta = `${e.mode.toString(8)} ${e.uid}:${e.gid}`;
    out[rel] = e.kind === 'link' ? `link ${e.content} ${meta}` : e.kind === 'dir' ? `dir ${meta}` : `file ${e.content} ${meta} ino=${e.ino}`;
  }
  // A folder that is not there has nothing to compare: two such fingerprints would be equal.
  if (!('.' in out)) throw new Error(`${dir} does not exist`);
  return out;
}

/** A temporary folder, removed by the returned function. */
export function scratch(prefix = 'mesh-host-test-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Scratch folders for one test file, each removed after its test: `folder()` gives a fresh one,
 * `folder('state')` a path inside a fresh one (not yet made).
 */
export function scratchFolders(afterEach: (fn: () => void) => void): (inside?: string) => string {
  const made: Array<() => void> = [];
  afterEach(() => made.splice(0).forEach((cleanup) => cleanup()));
  return (inside) => {
    const s = scratch();
    made.push(s.cleanup);
    return inside ? join(s.dir, inside) : s.dir;
  };
}
