import type { ReadEntry } from 'tar';
import type { ArchiveLimits } from '../../core/config/archive-limits.js';
import { resolveLink } from './archive-links.js';
import { entryName, parentOf } from './local-path.js';
import { ArchiveRefused, shown } from './refusal.js';

/**
 * One entry as it will stand under the target: a regular file, a directory, a symbolic link, or a
 * hard link to a file listed before it. Modes are masked to 0777.
 */
export interface ManifestEntry {
  /** Relative to the target, normal ('bin/nats'). */
  name: string;
  type: 'file' | 'dir' | 'symlink' | 'hardlink';
  /** A symbolic link's: 0777 (a link has no mode of its own); a hard link's: its file's. */
  mode: number;
  /** A file's content size; 0 for the others (a hard link's content is its file's, counted once). */
  size: number;
  /** sha256 (hex) of a file's content (a hard link's: its file's, once read). */
  sha256?: string;
  /** A symbolic link's target as the archive spells it; a hard link's file, by name. */
  link?: string;
}

const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);
const KIND: Record<string, ManifestEntry['type']> = { Directory: 'dir', SymbolicLink: 'symlink', Link: 'hardlink' };
const SPECIAL_BITS: Array<[number, string]> = [[0o4000, 'set-uid'], [0o2000, 'set-gid'], [0o1000, 'sticky']];
const LINK_WORDS = { symlink: 'symbolic link', hardlink: 'hard link' } as const;

/**
 * Admits the entries of one archive in its order, or refuses the whole archive (ArchiveRefused): a
 * device or fifo, set-uid/set-gid/sticky bits, a name that is not local, the same name twice, a name
 * under a file or a link, more than the limits, a hard link to anything but a file listed before it,
 * a symbolic link that could lead outside the target (checked once every entry is known, by
 * `finish`). Owners in the archive are never read.
 */
export class Admission {
  readonly entries: ManifestEntry[] = [];
  private readonly byName = new Map<string, ManifestEntry>();
  /** Names the archive lists itself (not only implies). */
  private readonly explicit = new Set<string>();
  /** The sum of the files' declared sizes. */
  declared = 0;
  count = 0;

  constructor(private readonly limits: ArchiveLimits) {}

  /** Records one entry; returns it when its content is to be read (a file). */
  admit(e: ReadEntry): ManifestEntry | undefined {
    const raw = e.path;
    const type = FILE_TYPES.has(e.type) ? 'file' : KIND[e.type];
    if (type === undefined) throw new ArchiveRefused('special-entry', `entry ${shown(raw)} is a ${e.type}; only files, directories and links are unpacked`, raw);
    const named = entryName(raw);
    if ('problem' in named) throw new ArchiveRefused('not-local', `entry ${shown(raw)} is not a local path (${named.problem})`, raw);
    const mode = type === 'symlink' ? 0o777 : e.mode ?? (type === 'dir' ? 0o755 : 0o644);
    const bits = type === 'symlink' ? [] : SPECIAL_BITS.filter(([bit]) => (mode & bit) !== 0).map(([, word]) => word);
    if (bits.length > 0) throw new ArchiveRefused('special-bits', `entry ${shown(raw)} carries ${bits.join(', ')} bits (mode ${(mode & 0o7777).toString(8).padStart(4, '0')})`, raw);
    if (named.name === '') {
      if (type !== 'dir') throw new ArchiveRefused('not-local', `entry ${shown(raw)} names the target itself as a ${type === 'file' ? 'file' : LINK_WORDS[type]}`, raw);
      return undefined; // './': the target, which the resource (not the archive) describes
    }
    if (++this.count > this.limits.maxEntries) throw new ArchiveRefused('too-large', `the archive holds more than ${this.limits.maxEntries} entries (the limit)`, raw);
    const size = type === 'file' ? e.size ?? 0 : 0;
    this.declared += size;
    if (this.declared > this.limits.maxBytes) throw new ArchiveRefused('too-large', `the archive unpacks to more than ${this.limits.maxBytes} bytes (the limit), at entry ${shown(raw)}`, raw);
    const name = named.name;
    if (this.explicit.has(name)) throw new ArchiveRefused('duplicate-entry', `entry ${shown(raw)} names ${shown(name)} a second time`, raw);
    this.explicit.add(name);
    const implied = this.byName.get(name);
    if (implied && type !== 'dir') throw new ArchiveRefused('duplicate-entry', `entry ${shown(raw)} is a ${type === 'file' ? 'file' : LINK_WORDS[type]}, but entries before it lie under ${shown(name)}`, raw);
    this.ensureParents(name);
    if (implied) {
      // A directory the archive implied so far, listed now with its own mode.
      implied.mode = mode & 0o777;
      return undefined;
    }
    const entry: ManifestEntry = { name, type, mode: mode & 0o777, size };
    if (type === 'hardlink') this.hardLink(entry, raw, e.linkpath ?? '');
    if (type === 'symlink') entry.link = e.linkpath ?? '';
    this.byName.set(name, entry);
    this.entries.push(entry);
    return type === 'file' ? entry : undefined;
  }

  /** Once every entry is known: each symbolic link resolved over the archive's own entries; hard links take their file's hash. */
  finish(): void {
    const lookup = (name: string) => this.byName.get(name);
    for (const entry of this.entries) {
      if (entry.type === 'hardlink') {
        const sha256 = this.byName.get(entry.link!)?.sha256;
        if (sha256) entry.sha256 = sha256;
      }
      if (entry.type !== 'symlink') continue;
      const resolved = resolveLink(entry.name, entry.link!, lookup);
      if ('problem' in resolved) {
        throw new ArchiveRefused('link-entry', `entry ${shown(entry.name)} is a symbolic link to ${shown(entry.link!)}, which is refused: ${resolved.problem}; only links that stay inside the target are unpacked`, entry.name, entry.link);
      }
    }
  }

  /** A hard link names a file listed before it (a link to a link, that link's file): never anything else. */
  private hardLink(entry: ManifestEntry, raw: string, linkpath: string): void {
    const refuse = (why: string) => new ArchiveRefused('link-entry', `entry ${shown(raw)} is a hard link to ${shown(linkpath)}, which is refused: ${why}; a hard link must name a file listed before it`, raw, linkpath);
    const named = entryName(linkpath);
    if ('problem' in named) throw refuse(`not a local path (${named.problem})`);
    const to = this.explicit.has(named.name) ? this.byName.get(named.name) : undefined;
    if (to === undefined) throw refuse('the archive lists no such entry before it');
    if (to.type !== 'file' && to.type !== 'hardlink') throw refuse(`it is a ${to.type === 'dir' ? 'directory' : 'symbolic link'}`);
    entry.link = to.type === 'hardlink' ? to.link! : to.name;
    entry.mode = to.mode;
  }

  /** Directories an entry's name implies, listed before it (0755) unless the archive lists them. */
  private ensureParents(name: string): void {
    const parent = parentOf(name);
    if (parent === '') return;
    const known = this.byName.get(parent);
    if (known && known.type !== 'dir') {
      throw new ArchiveRefused('duplicate-entry', `${shown(name)} lies under ${shown(parent)}, which the archive holds as a ${known.type === 'file' ? 'file' : LINK_WORDS[known.type]}`, name);
    }
    if (known) return;
    this.ensureParents(parent);
    const dir: ManifestEntry = { name: parent, type: 'dir', mode: 0o755, size: 0 };
    this.byName.set(parent, dir);
    this.entries.push(dir);
  }
}
