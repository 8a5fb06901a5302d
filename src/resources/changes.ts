/**
 * What a step changes, as data: one member per kind of change, with the fields that say it. Only
 * report/ turns a change into words (wordsOf); everything else reads the fields. Changes carry no
 * time and no path but the resource's own, so the same change on two machines is the same value (a
 * fleet's plan groups them). A sensitive file's content change carries no hint of the content.
 */
export type Change =
  /** Made where nothing stood. */
  | { kind: 'create' }
  /** Found here and taken over; the original kept (a container's set aside under another name, and stopped). */
  | { kind: 'take'; aside?: string }
  /** Found here and left as found (an adopted machine). */
  | { kind: 'hold' }
  /** Let go of: removed, or given back as it was found. */
  | { kind: 'remove' }
  /** Let go of and left in place (no longer what the host made, or others' things inside). */
  | { kind: 'leave' }
  /** What was taken over given back: the original file, or a directory's original mode and owner. */
  | { kind: 'give-back'; what: 'original' | 'mode and owner' }
  /** A container taken over given its name back, and started again when it was running when taken. */
  | { kind: 'give-back'; what: 'container'; name: string; start: boolean }
  /** The content rewritten: lines added and removed for text, sizes otherwise, nothing for a sensitive file. */
  | { kind: 'content'; lines: { added: number; removed: number } }
  | { kind: 'content'; bytes: { from: number; to: number } }
  | { kind: 'content'; sensitive: true }
  /** Mode as four octal digits. */
  | { kind: 'mode'; from: string; to: string }
  /** Owner and group by name (a number when the machine has no name for it). */
  | { kind: 'owner'; from: string; to: string }
  | { kind: 'group'; from: string; to: string }
  /** A name planted as one of several links to the inode: the write replaces the name, never the inode. */
  | { kind: 'hard-link'; names: number }
  /** A symbolic link at a file the host wrote, replaced by the file. */
  | { kind: 'symlink-replaced' }
  /** A service: started, stopped, restarted or reloaded because the resources named changed. */
  | { kind: 'start' }
  | { kind: 'stop' }
  | { kind: 'restart'; because: string[] }
  | { kind: 'reload'; because: string[] }
  | { kind: 'enable' }
  | { kind: 'disable' }
  /** A unit not loaded yet: the apply looks again once what it installs is there. */
  | { kind: 'check' }
  /**
   * Replaced by a different one: the fields that differ (a container's), or what it was and is to be
   * (an archive's sha256).
   */
  | { kind: 'replace'; fields: string[]; from?: string; to?: string }
  /** An image brought into the container engine: pulled by its digest, or loaded from an archive of the mesh. */
  | { kind: 'pull'; ref: string }
  | { kind: 'load'; object: string }
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

export type ChangeKind = Change['kind'];

export const CREATE: Change = Object.freeze({ kind: 'create' });
export const TAKE: Change = Object.freeze({ kind: 'take' });
export const HOLD: Change = Object.freeze({ kind: 'hold' });
export const REMOVE: Change = Object.freeze({ kind: 'remove' });
export const LEAVE: Change = Object.freeze({ kind: 'leave' });

/** The changes of every unchanged step: one shared, frozen, empty list. */
export const NO_CHANGES: readonly Change[] = Object.freeze([]);
