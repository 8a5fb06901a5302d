/** What an archive may unpack to; a host's configuration may change them. */
export interface ArchiveLimits {
  /** The sum of the entries' sizes (default 1 GiB): a gzip bomb is refused, not filled. */
  maxBytes: number;
  /** How many entries (default 100,000): the journal names each one. */
  maxEntries: number;
  /** Verified archives kept in the state directory to restore drift without the link (default 1 GiB). */
  cacheBytes: number;
}

export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = { maxBytes: 1024 ** 3, maxEntries: 100_000, cacheBytes: 1024 ** 3 };
