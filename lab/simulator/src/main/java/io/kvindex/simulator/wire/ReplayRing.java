package io.kvindex.simulator.wire;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The last {@code capacity} published batches, as vLLM's {@code deque(maxlen=buffer_steps)} of
 * {@code (seq, payload)}. Thread-safe (synchronized): the engine appends, the publisher thread
 * replays.
 */
final class ReplayRing {
  record Entry(long seq, byte[] payload) {}

  private final int capacity;
  private final ArrayDeque<Entry> entries;

  ReplayRing(int capacity) {
    this.capacity = capacity;
    this.entries = new ArrayDeque<>(Math.min(capacity, 1024));
  }

  synchronized void add(long seq, byte[] payload) {
    if (entries.size() == capacity) {
      entries.pollFirst();
    }
    entries.addLast(new Entry(seq, payload));
  }

  /** The held entries with {@code seq >= start} (unsigned), oldest first. */
  synchronized List<Entry> from(long start) {
    List<Entry> out = new ArrayList<>();
    for (Entry e : entries) {
      if (Long.compareUnsigned(e.seq(), start) >= 0) {
        out.add(e);
      }
    }
    return out;
  }

  synchronized void clear() {
    entries.clear();
  }
}
