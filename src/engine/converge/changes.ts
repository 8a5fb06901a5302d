import type { KindChange } from '../../kinds/kind-specs.js';

/**
 * What a step changes, as data: one member per kind of change, with the fields that say it. Only
 * engine/report/ turns a change into words (wordsOf, with the words each kind gives for its own); everything else reads the fields. Changes carry no
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
  /** Mode as four octal digits. */
  | { kind: 'mode'; from: string; to: string }
  /** Owner and group by name (a number when the machine has no name for it). */
  | { kind: 'owner'; from: string; to: string }
  | { kind: 'group'; from: string; to: string }
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
  /** What only some kinds change (a file's content, an archive's unpack, a container's image): each kind says its own. */
  | KindChange;

export type ChangeKind = Change['kind'];

export const CREATE: Change = Object.freeze({ kind: 'create' });
export const TAKE: Change = Object.freeze({ kind: 'take' });
export const HOLD: Change = Object.freeze({ kind: 'hold' });
export const REMOVE: Change = Object.freeze({ kind: 'remove' });
export const LEAVE: Change = Object.freeze({ kind: 'leave' });

/** The changes of every unchanged step: one shared, frozen, empty list. */
export const NO_CHANGES: readonly Change[] = Object.freeze([]);
