package io.kvindex.ingester.stream;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The payload hashes of the batches a stream applied most recently, by sequence: a live batch seen
 * again with the same payload is a duplicate, and a ring's copy with another payload under the same
 * sequence comes from a new engine. Not thread-safe: one worker thread drives it.
 */
final class RecentlyApplied {
  private final int size;
  private final Map<Long, Integer> hashes;

  /** Remembers the most recent {@code size} batches. */
  RecentlyApplied(int size) {
    this.size = size;
    this.hashes = new LinkedHashMap<>(size * 2, 0.75f, false);
  }

  /** Remembers an applied batch, forgetting the oldest past the bound. */
  void add(Batch batch) {
    hashes.put(batch.seq(), batch.payloadHash());
    if (hashes.size() > size) {
      hashes.remove(hashes.keySet().iterator().next());
    }
  }

  /** Whether the batch at {@code seq} is remembered. */
  boolean contains(long seq) {
    return hashes.containsKey(seq);
  }

  /** Whether {@code batch} is a second copy of a batch remembered (same sequence, same payload). */
  boolean resent(Batch batch) {
    Integer seen = hashes.get(batch.seq());
    return seen != null && seen == batch.payloadHash();
  }

  /** Whether a batch is remembered under {@code batch}'s sequence with another payload. */
  boolean differs(Batch batch) {
    Integer seen = hashes.get(batch.seq());
    return seen != null && seen != batch.payloadHash();
  }

  /** Forgets every batch (a new engine's sequences say nothing about the old one's). */
  void clear() {
    hashes.clear();
  }
}
