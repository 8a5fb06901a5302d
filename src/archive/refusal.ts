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

/** The whole archive (or its journal) is refused; nothing was written. */
export class ArchiveRefused extends Error {
  constructor(
    readonly kind: ArchiveRefusalKind,
    message: string,
    /** The entry at fault, when one is. */
    readonly entry?: string,
  ) {
    super(message);
    this.name = 'ArchiveRefused';
  }
}
