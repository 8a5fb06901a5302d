import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { JournalEntry } from './journal.js';
import { joinTarget } from './local-path.js';
import { ArchiveRefused } from './refusal.js';
import { look, type TargetReads, type TargetWrites } from './target.js';

/**
 * Stages the removal of exactly these journal entries: files, hard links and symbolic links (or the
 * originals they took over, given back) first, then directories deepest first, each only when empty
 * (the write path leaves a directory others filled, and says so). A symbolic link is removed as a
 * name, never followed; one found as the archive has it when the host took the target over is left
 * as it was found. Anything else the host never writes (a link at a file's place) is left where it
 * stands. Refused whole, before anything is staged, when a place cannot be reached without following
 * a link. Returns how many removals were staged.
 */
export function stageRemoval(fs: TargetReads, writes: TargetWrites, target: string, entries: JournalEntry[], takenDir: string, left: string[]): number {
  const looks = entries.map((entry) => {
    const path = joinTarget(target, entry.name);
    return { entry, path, seen: look(fs, path) };
  });
  const unreachable = looks.flatMap((l) => ('problem' in l.seen ? [l.seen.problem] : []));
  if (unreachable.length > 0) throw new ArchiveRefused('in-the-way', `${unreachable.join('; ')}; nothing was removed`);
  let removed = 0;
  const depth = (name: string) => name.split('/').length;
  const present = looks.flatMap((l) => ('st' in l.seen && l.seen.st !== undefined ? [{ ...l, st: l.seen.st }] : []));
  for (const { entry, path, st } of present) {
    if (st.isDirectory()) continue;
    const original = entry.original;
    if (entry.type === 'symlink' && st.isSymbolicLink()) {
      if (original) continue; // found as the archive has it: given back by being left
      writes.removeFile(path);
      removed++;
      continue;
    }
    if (original?.copy !== undefined) {
      const copy = join(takenDir, original.copy);
      writes.writeFile(path, readFileSync(copy), { mode: original.mode, uid: original.uid, gid: original.gid });
      continue;
    }
    if (!st.isFile()) {
      left.push(`${path}: ${st.isSymbolicLink() ? 'a symbolic link' : 'not a regular file'} the host did not write; left`);
      continue;
    }
    writes.removeFile(path);
    removed++;
  }
  for (const { entry, path } of present.filter((p) => p.st.isDirectory()).sort((a, b) => depth(b.entry.name) - depth(a.entry.name))) {
    if (entry.type !== 'dir') {
      left.push(`${path}: a directory where the archive had ${entry.type === 'symlink' ? 'a symbolic link' : 'a file'}; left`);
      continue;
    }
    if (entry.original) writes.setMeta(path, { mode: entry.original.mode, uid: entry.original.uid, gid: entry.original.gid }, 'directory');
    else {
      writes.removeDirectory(path);
      removed++;
    }
  }
  return removed;
}

/** The kept copies of originals given back: removed once the giving back is durable. */
export function keptCopies(entries: JournalEntry[], takenDir: string): string[] {
  return entries.flatMap((e) => (e.original?.copy ? [join(takenDir, e.original.copy)] : []));
}
