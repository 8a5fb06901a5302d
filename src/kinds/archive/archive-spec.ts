import { kindSpec, type WordsOf } from '../../core/vocabulary/kind-spec.js';
import type { ArchiveResource } from './archive-schema.js';

export type { ArchiveResource } from './archive-schema.js';

/** What an archive's step changes beyond what every kind may: its fetch, its unpack and what drifted in what it unpacked. */
export type ArchiveChange =
  /** An archive fetched from the archive store (by object name). */
  | { kind: 'fetch'; object?: string }
  /** An archive unpacked; how many entries and bytes, when it could be read before the apply. */
  | { kind: 'unpack'; sha256: string; entries?: number; bytes?: number; links?: number }
  /** An unpack a crash cut short, finished. */
  | { kind: 'finish-unpack'; sha256: string }
  /** Entries of an archive restored from its kept copy (the first few named, with what drifted). */
  | { kind: 'restore'; entries: number; drift: Array<{ name: string; why: string }> }
  /**
   * Links of an archive made again (changed or removed by hand): how many, and the first few with the
   * text each gets (`to`; a hard link's file, `hard`) and the text found instead (`was`), if any.
   */
  | { kind: 'relink'; entries: number; links: Array<{ name: string; to: string; was?: string; hard?: true }> }
  /** Entries an archive unpacked that go: all of them at its removal, or those a new archive lacks. */
  | { kind: 'remove-entries'; entries: number; lacking?: true };

const short = (sha: string) => sha.slice(0, 12);
const entries = (n: number) => (n === 1 ? '1 entry' : `${n} entries`);

export const ARCHIVE_WORDS: WordsOf<ArchiveChange> = {
  fetch: (change) => `fetch ${change.object === undefined ? 'inline' : `object '${change.object}'`}`,
  unpack: (change) => `unpack ${short(change.sha256)}${change.entries === undefined ? '' : ` (${entries(change.entries)}, ${change.bytes} bytes${change.links ? `, ${change.links} link${change.links === 1 ? '' : 's'}` : ''})`}`,
  'finish-unpack': (change) => `finish the unpack of ${short(change.sha256)} cut short`,
  restore: (change) => `restore ${entries(change.entries)}: ${change.drift.map((d) => `${d.name} (${d.why})`).join(', ')}${change.entries > change.drift.length ? ', …' : ''}`,
  relink: (change) =>
    `relink ${change.entries === 1 ? '1 link' : `${change.entries} links`}: ${change.links.map((l) => `${l.name} → ${l.to}${l.hard ? ' (hard)' : ''}${l.was === undefined ? '' : ` (was ${l.was})`}`).join(', ')}${change.entries > change.links.length ? ', …' : ''}`,
  'remove-entries': (change) => (change.lacking ? `remove ${entries(change.entries)} the new archive lacks` : entries(change.entries)),
};

export interface ArchiveRecordFields {
  /** What the archive unpacked (paths relative to its target). */
  unpacked?: string[];
}

export const archiveSpec = kindSpec<ArchiveResource, ArchiveChange, ArchiveRecordFields>({
  type: 'archive',
  words: ARCHIVE_WORDS,
  place: { field: 'path', what: 'path', space: 'path' },
  atPath: { holdsTree: true },
});
