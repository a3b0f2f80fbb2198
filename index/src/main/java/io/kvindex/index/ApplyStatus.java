package io.kvindex.index;

/** What became of a batch handed to {@link PrefixIndex#apply}. Immutable and thread-safe. */
public enum ApplyStatus {
  /** The batch was the stream's next one and is applied; the watermark is its sequence number. */
  APPLIED,
  /** The sequence number is at or below the watermark: already applied, nothing changed. */
  DUPLICATE,
  /** The sequence number skips past watermark + 1: nothing changed; replay from the watermark. */
  GAP,
  /**
   * Several batches were given as one ({@code firstSeq < seq}) and the first of them is part
   * applied: an earlier call of it, in chunks, stopped between two (a writer paused or taken over).
   * Nothing changed; apply the batches one at a time, and the first goes on from where it was left.
   */
  PARTLY_APPLIED,
  /** The lease is not the stream's current lease: nothing changed; stop writing. */
  FENCED,
  /**
   * The index's epoch is not the one this process last saw: Redis lost the index (a restart without
   * persistence, a FLUSHALL). Nothing changed; the stream starts again from what its engine can
   * replay (reset listeners hear of it).
   */
  RESET,
  /**
   * Redis kept failing with temporary errors until the retry budget ran out: the batch may or may
   * not have been applied. The next batch will tell (DUPLICATE or GAP); replay heals either way.
   */
  SWALLOWED
}
