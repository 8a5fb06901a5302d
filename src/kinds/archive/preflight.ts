import type { Stats } from 'node:fs';
import type { Journal, JournalEntry } from './journal.js';
import { places } from './drift.js';
import type { Manifest, ManifestEntry } from './archive-read.js';
import type { TargetReads } from './target.js';

const kindOf = (st: Stats) => (st.isDirectory() ? 'a directory' : st.isFile() ? 'a file' : st.isSymbolicLink() ? 'a symbolic link' : st.isFIFO() ? 'a fifo' : st.isSocket() ? 'a socket' : 'a device');
const wanted = (entry: ManifestEntry) => (entry.type === 'dir' ? 'a directory' : entry.type === 'symlink' ? 'a symbolic link' : 'a file');

/** The old archive's symbolic links the new one does not keep as links: removed before anything is made below their names. */
export function replacedLinks(old: Journal | undefined, manifest: { entries: readonly { name: string; type: string }[] }): Set<string> {
  const next = new Map(manifest.entries.map((e) => [e.name, e.type]));
  return new Set((old?.entries ?? []).filter((e) => e.type === 'symlink' && next.get(e.name) !== 'symlink').map((e) => e.name));
}

/** Whether a name lies below one of these (an old link about to be removed): nothing stands there to look at. */
export function under(links: Set<string>, name: string): boolean {
  if (links.size === 0) return false;
  for (let at = name.indexOf('/'); at >= 0; at = name.indexOf('/', at + 1)) if (links.has(name.slice(0, at))) return true;
  return false;
}

/**
 * Before a new archive is unpacked: every entry's place must be reachable without a link (but for the
 * old archive's own links, removed first), and what stands there must be the host's (named by the old
 * journal, and replaceable without following a link or emptying a directory) or of the entry's own
 * kind (then taken over, its original kept; a symbolic link only when it already links as the archive's
 * does). Reads only; returns what was found at entries' places.
 */
export function preflight(fs: TargetReads, target: string, manifest: Manifest, old: Journal | undefined): { problems: string[]; found: Map<string, Stats> } {
  const oldByName = new Map(old?.entries.map((e) => [e.name, e]));
  const replaced = replacedLinks(old, manifest);
  const problems: string[] = [];
  const found = new Map<string, Stats>();
  const reachable = manifest.entries.filter((e) => !under(replaced, e.name));
  for (const { entry, path, st } of places(fs, target, reachable, problems)) {
    if (st === undefined) continue;
    const mine = oldByName.get(entry.name);
    const problem = mine ? ownPlaceProblem(fs, path, st, entry, mine) : foundPlaceProblem(fs, path, st, entry);
    if (problem) problems.push(problem);
    else if (!mine) found.set(entry.name, st);
  }
  return { problems, found };
}

/** What stands at a place of the old archive's: replaced, unless that needs following a link or emptying a directory. */
function ownPlaceProblem(fs: TargetReads, path: string, st: Stats, entry: ManifestEntry, mine: JournalEntry): string | undefined {
  if (st.isSymbolicLink()) {
    // A name renamed over (a file, a link) or an old link removed first; never a directory made through one.
    return entry.type !== 'dir' || mine.type === 'symlink' ? undefined : `${path} is a symbolic link (to ${fs.readlink(path)}), not followed`;
  }
  if (st.isDirectory()) return entry.type === 'dir' || mine.type === 'dir' ? undefined : `${path} is a directory where the archive has ${wanted(entry)}`;
  if (st.isFile()) return entry.type !== 'dir' || mine.type !== 'dir' ? undefined : `${path} is a file where the archive has a directory`;
  return `${path} is ${kindOf(st)} where the archive has ${wanted(entry)}`;
}

/** What stands at a place the host never unpacked: taken over when it is of the entry's own kind. */
function foundPlaceProblem(fs: TargetReads, path: string, st: Stats, entry: ManifestEntry): string | undefined {
  if (st.isSymbolicLink()) {
    const text = fs.readlink(path);
    return entry.type === 'symlink' && text === entry.link ? undefined : `${path} is a symbolic link (to ${text}), not followed`;
  }
  const same = st.isDirectory() ? entry.type === 'dir' : st.isFile() ? entry.type === 'file' || entry.type === 'hardlink' : false;
  return same ? undefined : `${path} is ${kindOf(st)} where the archive has ${wanted(entry)}`;
}
