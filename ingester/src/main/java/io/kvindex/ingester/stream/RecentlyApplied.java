package io.kvindex.ingester.stream;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The payload hashes of the batches a stream applied most recently, by sequence, and the checks
 * made against them: a live batch seen again with the same payload is a duplicate, and a ring's
 * copy with another payload under the same sequence comes from a new engine. Not thread-safe: one
 * worker thread drives it.
 */
final class RecentlyApplied {
  /** Live batches recognised as duplicates once applied: the most recent this many. */
  static final int BATCHES = 256;

  private final Map<Long, Integer> hashes = new LinkedHashMap<>(BATCHES * 2, 0.75f, false);

  /** Remembers an applied batch, forgetting the oldest past the bound. */
  void add(Batch batch) {
    hashes.put(batch.seq(), batch.payloadHash());
    if (hashes.size() > BATCHES) {
      hashes.remove(hashes.keySet().iterator().next());
    }
  }

  /** Whether {@code batch} is a second copy of a batch remembered (same sequence, same payload). */
  boolean resent(Batch batch) {
    Integer seen = hashes.get(batch.seq());
    return seen != null && seen == batch.payloadHash();
  }

  /**
   * The sequence a replay that must start at {@code from} asks for: one early when {@code from} is
   * the stream's next sequence ({@code expected}) and the batch before it is remembered, so that
   * {@link #sameEngine} can compare the ring's copy with it.
   */
  long checkableFrom(long from, long expected) {
    return from > 0 && from == expected && hashes.containsKey(from - 1) ? from - 1 : from;
  }

  /**
   * Whether the replayed batches were published by the engine whose batches were applied (those
   * below {@code expected}): a ring's copy of an applied batch that is not the batch applied
   * (another payload under the same sequence) comes from a new process, one whose sequence numbers
   * passed the watermark before the live socket heard it, so that no sequence ever went backwards.
   * A copy that cannot be read proves nothing.
   */
  boolean sameEngine(List<Batch> replayed, long expected) {
    for (Batch b : replayed) {
      if (b.seq() < expected && b.malformed() == null && differs(b)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Whether the replayed batches hold a readable copy of an applied batch (below {@code expected})
   * that is remembered, so that {@link #sameEngine} had something to compare: a ring that holds
   * none (a new process that has not published as far yet, or no answer) says nothing about which
   * engine published it.
   */
  boolean compared(List<Batch> replayed, long expected) {
    for (Batch b : replayed) {
      if (b.seq() < expected && b.malformed() == null && hashes.containsKey(b.seq())) {
        return true;
      }
    }
    return false;
  }

  /** Whether a batch is remembered under {@code batch}'s sequence with another payload. */
  private boolean differs(Batch batch) {
    Integer seen = hashes.get(batch.seq());
    return seen != null && seen != batch.payloadHash();
  }

  /** Forgets every batch (a new engine's sequences say nothing about the old one's). */
  void clear() {
    hashes.clear();
  }
}
