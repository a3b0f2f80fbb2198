package io.kvindex.index;

/** What became of a {@link PrefixIndex#purge}. Immutable and thread-safe. */
public enum PurgeStatus {
  /** Every entry of the stream is invisible to lookups that start from now on. */
  PURGED,
  /** The lease is not the stream's current lease: nothing changed. */
  FENCED,
  /** The index's epoch changed under this process (see {@link ApplyStatus#RESET}). */
  RESET,
  /** Temporary errors until the retry budget ran out: unknown whether it happened; retry it. */
  SWALLOWED
}
