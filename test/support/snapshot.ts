import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Everything under some folders, as the kernel has it: for proving that an act wrote nothing (a quiet
 * reconcile, a dry run, a fleet plan) or what exactly it wrote. A rewrite with the same bytes shows (its
 * inode, mtime or ctime moves), and so does a file made and removed again (its folder's mtime moves).
 */
export interface Entry {
  kind: 'file' | 'dir' | 'link' | 'other';
  /** Permission bits with setuid, setgid and sticky. */
  mode: number;
  uid: number;
  gid: number;
  size: bigint;
  ino: bigint;
  /** Nanoseconds since the epoch. */
  mtimeNs: bigint;
  ctimeNs: bigint;
  /** A file's sha256, a link's target. */
  content?: string;
}

/** Paths named `label:/rel` (the folder itself is `label:/`), in walk order. */
export type Snapshot = Map<string, Entry>;

const FIELDS = ['kind', 'mode', 'uid', 'gid', 'size', 'ino', 'mtimeNs', 'ctimeNs', 'content'] as const;
export type Field = (typeof FIELDS)[number];

export interface Difference {
  path: string;
  what: 'added' | 'removed' | 'changed';
  /** For a change: the fields that differ. */
  fields?: Field[];
}

function entryOf(path: string): Entry {
  const st = lstatSync(path, { bigint: true });
  const kind = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'link' : 'other';
  const entry: Entry = { kind, mode: Number(st.mode & 0o7777n), uid: Number(st.uid), gid: Number(st.gid), size: st.size, ino: st.ino, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs };
  if (kind === 'file') entry.content = createHash('sha256').update(readFileSync(path)).digest('hex');
  else if (kind === 'link') entry.content = readlinkSync(path);
  return entry;
}

/**
 * Every path under each folder, by label (`{ root, state }`); a folder that does not exist has no entries,
 * so its making shows as added. Folders are walked in name order and not followed through links.
 */
export function snapshot(dirs: Record<string, string>): Snapshot {
  const out: Snapshot = new Map();
  const walk = (label: string, base: string, rel: string) => {
    const entry = entryOf(join(base, rel));
    out.set(`${label}:/${rel}`, entry);
    if (entry.kind === 'dir') for (const name of readdirSync(join(base, rel)).sort()) walk(label, base, rel ? `${rel}/${name}` : name);
  };
  for (const [label, dir] of Object.entries(dirs)) {
    try {
      lstatSync(dir);
    } catch {
      continue;
    }
    walk(label, dir, '');
  }
  return out;
}

/** What changed from `a` to `b`: each path added, removed, or changed with the fields that differ. Empty when nothing did. */
export function diff(a: Snapshot, b: Snapshot, ignore: readonly Field[] = []): Difference[] {
  const out: Difference[] = [];
  for (const [path, was] of a) {
    const now = b.get(path);
    if (!now) out.push({ path, what: 'removed' });
    else {
      const fields = FIELDS.filter((f) => !ignore.includes(f) && was[f] !== now[f]);
      if (fields.length > 0) out.push({ path, what: 'changed', fields });
    }
  }
  for (const path of b.keys()) if (!a.has(path)) out.push({ path, what: 'added' });
  return out;
}
