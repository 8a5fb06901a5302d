/** Why an archive was refused: typed, so that reports and tests never classify by message text. */
export type ArchiveRefusalKind =
  | 'digest-mismatch'
  | 'link-entry'
  | 'special-entry'
  | 'special-bits'
  | 'not-local'
  | 'duplicate-entry'
  | 'too-large'
  | 'corrupt'
  | 'in-the-way'
  | 'fetch-failed'
  | 'no-link'
  | 'journal-forged';

/** What a refusal names, whole: the readable message may cut it, this never does. */
export interface ArchiveRefusalData {
  kind: ArchiveRefusalKind;
  /** The entry at fault, as the archive spells it. */
  entry?: string;
  /** The link target at fault, as the archive spells it. */
  link?: string;
}

/** The whole archive (or its journal) is refused; nothing was written. */
export class ArchiveRefused extends Error {
  constructor(
    readonly kind: ArchiveRefusalKind,
    message: string,
    /** The entry at fault, when one is. */
    readonly entry?: string,
    /** The link target at fault, when one is. */
    readonly link?: string,
  ) {
    super(message);
    this.name = 'ArchiveRefused';
  }

  /** The refusal as data, with every value whole (for a JSON report). */
  get subject(): ArchiveRefusalData {
    return { kind: this.kind, ...(this.entry !== undefined ? { entry: this.entry } : {}), ...(this.link !== undefined ? { link: this.link } : {}) };
  }
}

/** Names and link targets longer than this are cut in the middle when shown. */
export const SHOWN_CHARACTERS = 200;

/**
 * A value from an archive as a refusal shows it: quoted, and when over 200 characters cut in the
 * middle with its length said ('aaa…zzz' (444821 characters)). An archive's name can be as long as
 * the archive; one line of a report or a log should not be.
 */
export function shown(value: string): string {
  if (value.length <= SHOWN_CHARACTERS) return `'${value}'`;
  return `'${cut(value)}' (${value.length} characters)`;
}

/** A long text cut in the middle to 200 characters (and an ellipsis); its length is the caller's to say. */
export function cut(value: string): string {
  const half = SHOWN_CHARACTERS / 2;
  return value.length <= SHOWN_CHARACTERS ? value : `${value.slice(0, half)}…${value.slice(-half)}`;
}
