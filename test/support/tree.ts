import { createHash } from 'node:crypto';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fingerprint of everything under a folder: type, mode, owner, content or link target of each entry. */
export function hashTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    const path = join(dir, rel);
    const st = lstatSync(path);
    const meta = `${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid}`;
    if (st.isSymbolicLink()) out[rel || '.'] = `link ${readlinkSync(path)} ${meta}`;
    else if (st.isDirectory()) {
      out[rel || '.'] = `dir ${meta}`;
      for (const name of readdirSync(path).sort()) walk(rel ? `${rel}/${name}` : name);
    } else out[rel] = `file ${createHash('sha256').update(readFileSync(path)).digest('hex')} ${meta} ino=${st.ino}`;
  };
  walk('');
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
